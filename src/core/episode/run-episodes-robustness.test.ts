import { describe, expect, it } from 'vitest';
import { createMockGenerator, createMockSearchEngine, createRawImageOps } from '../../adapters/mock/index';
import { createScriptedPolicy } from '../../adapters/scripted-policy/index';
import { interceptSessions } from '../../testing/sessions';
import { ProviderCallError } from '../errors';
import { trajectoryFromJSON, trajectoryToJSON } from '../trajectory/serialize';
import type { PromptRecord } from '../types';
import type { EpisodeInstance } from './instances';
import { runEpisodes } from './run-episodes';
import { completeWithGenerator, selectEvidence } from './terminal-answer';
import { checkTokenAccounting, one, pages, prompt } from '../../../test/support/episodes';

describe('completeWithGenerator', () => {
  it('appends the answer block with mask 0 and passes pages first, then crops', async () => {
    const policy = createScriptedPolicy({
      script: [
        '<search>acme revenue 2019</search>',
        '<bbox>[0, 0, 100, 50]</bbox>',
        '<search>overview</search>',
        '<search_complete>true</search_complete>',
      ],
    });
    const [episode] = await runEpisodes(one(), {
      policy,
      searchEngine: createMockSearchEngine({ pages }),
      imageOps: createRawImageOps(),
    });
    const generator = createMockGenerator({ facts: { 'acme_2.png': '4.5 billion dollars' } });
    const before = episode!.trajectory.fullInputIds.length;
    const t = (await completeWithGenerator(episode!, generator, { policy })).trajectory;
    // The episode's own trajectory is left as it was: completion builds a new one.
    expect(episode!.trajectory.fullInputIds.length).toBe(before);
    expect(t.finalAnswer).toBe('4.5 billion dollars');
    expect(t.generatedText.endsWith('<answer>4.5 billion dollars</answer>')).toBe(true);
    expect(t.lossMask.slice(before).every((m) => m === 0)).toBe(true);
    expect(generator.calls[0]!.evidence).toEqual(['acme_2.png', 'acme_1.png', 'crop:acme_2.png']);
    checkTokenAccounting(t);
    // The finished trajectory survives JSON.
    expect(trajectoryFromJSON(trajectoryToJSON(t))).toEqual(t);
  });

  it('records a generator failure on the trajectory instead of throwing', async () => {
    const policy = createScriptedPolicy({ script: ['<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    const completed = await completeWithGenerator(
      episode!,
      createMockGenerator({
        failWith: () =>
          new ProviderCallError({ port: 'generator', provider: 'x', message: 'quota', status: 429 }),
      }),
      { policy },
    );
    expect(completed.trajectory.error).toMatchObject({ stage: 'generator' });
  });

  it('caps and deduplicates the evidence', () => {
    const e = (kind: 'page' | 'crop', basename: string) => ({
      kind,
      basename,
      ...(kind === 'crop' && { sourceRegion: [0, 0, 1, 1] as const }),
    });
    const selected = selectEvidence(
      [e('crop', 'a'), e('page', 'a'), e('page', 'a'), e('page', 'b'), e('crop', 'a')],
      2,
    );
    expect(selected.map((x) => `${x.kind}:${x.basename}`)).toEqual(['page:a', 'page:b']);
  });
});

describe('runEpisodes: robustness', () => {
  const two = (p: PromptRecord = prompt): EpisodeInstance[] => [
    { prompt: p, groupId: 'g', rolloutIndex: 0 },
    { prompt: p, groupId: 'g', rolloutIndex: 1 },
  ];

  it('gives each rollout its own token budget: a neighbour near its context limit does not cut it short', async () => {
    const long = `<think>${'x'.repeat(150)}</think><search>acme revenue 2019</search>`;
    const policy = createScriptedPolicy({
      script: [
        [long, '<search_complete>true</search_complete>'],
        ['<search>acme</search>', '<search_complete>true</search_complete>'],
      ],
    });
    await runEpisodes(
      two(),
      { policy, searchEngine: createMockSearchEngine({ pages }) },
      { config: { maxContextTokens: 900, maxTurnTokens: 256 } },
    );
    const budgets = policy.calls.generateTurn[1]!.options.maxTokens as number[];
    expect(budgets).toHaveLength(2);
    expect(budgets[0]).toBeLessThan(budgets[1]!);
    expect(budgets[1]).toBe(256);
  });

  it('ends only the rollout whose policy output is malformed, and ends the session after everything settled', async () => {
    const policy = createScriptedPolicy({
      script: [
        ['<search>acme</search>', '<search_complete>true</search_complete>'],
        ['<search>acme</search>', '<search_complete>true</search_complete>'],
      ],
    });
    const order: string[] = [];
    interceptSessions(policy, (session) => ({
      generateTurn: async (rolloutIds, turnOptions) => {
        const outputs = await session.generateTurn(rolloutIds, turnOptions);
        return outputs.map((o) =>
          o.rolloutId === 1 ? { ...o, steps: [{ ...o.steps[0]!, logProb: 'bad' as unknown as number }] } : o,
        );
      },
      append: async (id, tokens, appendOptions) => {
        await new Promise((r) => setTimeout(r, 5));
        order.push(`append ${id}`);
        return session.append(id, tokens, appendOptions);
      },
      end: async () => {
        order.push('end');
        return session.end();
      },
    }));
    const episodes = await runEpisodes(two(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    expect(episodes[1]!.trajectory.terminated).toBe('error');
    expect(episodes[1]!.trajectory.error).toMatchObject({ stage: 'policy' });
    expect(episodes[1]!.trajectory.error!.message).toMatch(/steps\[0\]\.logProb/);
    expect(episodes[0]!.trajectory.terminated).toBe('complete');
    expect(order[order.length - 1]).toBe('end');
    expect(order.filter((o) => o === 'end')).toHaveLength(1);
  });

  it('ends every active rollout with a policy error when generateTurn fails, keeping what they did', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>'] });
    let turns = 0;
    interceptSessions(policy, (session) => ({
      generateTurn: async (rolloutIds, turnOptions) => {
        if (++turns === 2) throw new Error('inference server returned 500');
        return session.generateTurn(rolloutIds, turnOptions);
      },
    }));
    const episodes = await runEpisodes(two(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    for (const e of episodes) {
      expect(e.trajectory.terminated).toBe('error');
      expect(e.trajectory.error!.message).toMatch(
        /policy 'scripted' threw Error: inference server returned 500/,
      );
      expect(e.trajectory.retrievedBasenames).toHaveLength(1);
    }
  });

  it('ends with `context` instead of appending an observation that does not fit', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>'] });
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages }) },
      { config: { maxContextTokens: 1000, maxTurns: 10 } },
    );
    const t = episode!.trajectory;
    expect(t.terminated).toBe('context');
    // Everything the policy was given fits in the window (the forced and answer tokens are logged after it).
    expect(t.fullInputIds.length).toBeLessThanOrEqual(1000);
  });

  it('does not crop a page the policy no longer sees, nor a region smaller than a pixel', async () => {
    const policy = createScriptedPolicy({
      script: [
        '<search>acme revenue 2019</search>',
        '<bbox>[0, 0, 0.5, 0.5]</bbox>',
        '<search>forecast</search>',
        '<bbox>[0, 0, 10, 10]</bbox>',
        '<search_complete>true</search_complete>',
      ],
    });
    const imageOps = createRawImageOps();
    const [episode] = await runEpisodes(one(), {
      policy,
      searchEngine: createMockSearchEngine({ pages }),
      imageOps,
    });
    const t = episode!.trajectory;
    expect(t.turns[1]!.invalid?.reason).toBe('bbox_empty_area');
    expect(t.turns[3]!.invalid?.reason).toBe('bbox_no_image');
    expect(imageOps.calls).toHaveLength(0);
  });

  it('pages past topK when a query is repeated', async () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ basename: `p${i}.png`, text: `acme page ${i}` }));
    const policy = createScriptedPolicy({
      script: [...Array(12).fill('<search>acme</search>'), '<search_complete>true</search_complete>'],
    });
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages: many }) },
      { config: { searchTopK: 10, maxTurns: 13 } },
    );
    expect(episode!.trajectory.retrievedBasenames).toEqual(many.map((p) => p.basename));
  });

  it('hands observation images to a text+image policy', async () => {
    const policy = createScriptedPolicy({
      modalities: 'text+image',
      script: [
        '<search>acme revenue 2019</search>',
        '<bbox>[0, 0, 100, 50]</bbox>',
        '<search>forecast</search>',
        '<search_complete>true</search_complete>',
      ],
    });
    await runEpisodes(one(), {
      policy,
      searchEngine: createMockSearchEngine({ pages }),
      imageOps: createRawImageOps(),
    });
    expect(policy.calls.append.map((a) => a.images)).toEqual([1, 1, 0]);
    const text = createScriptedPolicy({
      script: ['<search>acme revenue 2019</search>', '<search_complete>true</search_complete>'],
    });
    await runEpisodes(one(), { policy: text, searchEngine: createMockSearchEngine({ pages }) });
    expect(text.calls.append.map((a) => a.images)).toEqual([0]);
  });

  it('shows a text+image policy no image after an invalid turn, not the previous one again', async () => {
    const policy = createScriptedPolicy({
      modalities: 'text+image',
      script: [
        '<search>acme revenue 2019</search>',
        'no action here',
        '<search_complete>true</search_complete>',
      ],
    });
    const [episode] = await runEpisodes(one(), {
      policy,
      searchEngine: createMockSearchEngine({ pages }),
      imageOps: createRawImageOps(),
    });
    expect(episode!.trajectory.turns[1]!.invalid).not.toBeNull();
    expect(policy.calls.append.map((a) => a.images)).toEqual([1, 0]);
  });

  it.each([
    [{ groupId: '', rolloutIndex: 0 }, 'instances[0].groupId'],
    [{ groupId: 'g', rolloutIndex: -1 }, 'instances[0].rolloutIndex'],
    [
      { groupId: 'g', rolloutIndex: 0, prompt: { ...prompt, goldenBasenames: 'a.png' } },
      'instances[0].prompt.goldenBasenames',
    ],
    [
      { groupId: 'g', rolloutIndex: 0, prompt: { ...prompt, reference: 42 } },
      'instances[0].prompt.reference',
    ],
  ])('validates instances: %j names %s', async (instance, argument) => {
    const policy = createScriptedPolicy({ script: ['<search_complete>true</search_complete>'] });
    await expect(
      runEpisodes([{ prompt, ...instance } as EpisodeInstance], {
        policy,
        searchEngine: createMockSearchEngine({ pages }),
      }),
    ).rejects.toThrow(new RegExp(argument.replace(/[.[\]]/g, '\\$&')));
  });

  it('refuses two instances with the same sample id', async () => {
    const policy = createScriptedPolicy({ script: ['<search_complete>true</search_complete>'] });
    await expect(
      runEpisodes([...one(), ...one()], { policy, searchEngine: createMockSearchEngine({ pages }) }),
    ).rejects.toThrow(/repeats sample 'g#0'/);
  });

  it('calls no generator in answer mode, even after the turn budget', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme</search>'] });
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages }) },
      { config: { mode: 'answer', maxTurns: 2 } },
    );
    const generator = createMockGenerator({ answer: 'x' });
    await completeWithGenerator(episode!, generator, { policy, mode: 'answer' });
    expect(generator.calls).toHaveLength(0);
    expect(episode!.trajectory.terminated).toBe('budget');
  });

  it('names the gateway when it has no policy (a typed error, not a bare Error)', async () => {
    const { createPortGateway } = await import('../calls/gateway');
    const { runEpisodesThrough } = await import('./run-episodes');
    const { createEpisodeStages } = await import('../pipeline/episode-stages');
    const gateway = createPortGateway({ searchEngine: createMockSearchEngine({ pages }) });
    await expect(runEpisodesThrough(gateway, one(), {})).rejects.toThrow(/Invalid argument 'gateway'/);
    expect(() => createEpisodeStages(gateway, {} as never)).toThrow(/Invalid argument 'gateway'/);
  });
});
