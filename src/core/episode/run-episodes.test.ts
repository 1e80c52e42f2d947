import { describe, expect, it } from 'vitest';
import { createMockGenerator, createMockSearchEngine, createRawImage, createRawImageOps } from '../../adapters/mock/index';
import { createScriptedPolicy } from '../../adapters/scripted-policy/index';
import { interceptSessions } from '../../testing/sessions';
import { ProviderCallError } from '../errors';
import { trajectoryFromJSON, trajectoryToJSON } from '../trajectory/serialize';
import type { PromptRecord } from '../types';
import { mapToSource, shownSize } from './image-frame';
import { ANSWER_INSTRUCTIONS } from './prompt';
import type { EpisodeInstance } from './instances';
import { runEpisodes } from './run-episodes';
import { completeWithGenerator, selectEvidence } from './terminal-answer';

const pages = [
  { basename: 'acme_1.png', text: 'Acme annual report 2019 overview', image: createRawImage(200, 100) },
  { basename: 'acme_2.png', text: 'Acme revenue 2019 was 4.5 billion dollars', image: createRawImage(200, 100) },
  { basename: 'acme_3.png', text: 'Acme revenue 2020 forecast' },
];
const prompt: PromptRecord = { uid: 'q1', question: 'What was Acme revenue in 2019?', reference: '4.5 billion dollars', goldenBasenames: ['acme_2.png'] };
const one = (p: PromptRecord = prompt): EpisodeInstance[] => [{ prompt: p, groupId: 'g', rolloutIndex: 0 }];

function checkTokenAccounting(t: import('../trajectory/trajectory').Trajectory) {
  expect(t.lossMask).toHaveLength(t.fullInputIds.length);
  expect(t.lossMask.slice(0, t.promptLength).every((m) => m === 0)).toBe(true);
  expect(t.lossMask.reduce((s, m) => s + m, 0)).toBe(t.tokenSteps.length);
  t.tokenSteps.forEach((step) => {
    expect(t.fullInputIds[step.position]).toBe(step.tokenId);
    expect(t.lossMask[step.position]).toBe(1);
  });
  expect(t.generatedPositions).toEqual(t.tokenSteps.map((s) => s.position));
}

describe('runEpisodes', () => {
  it('runs search then search_complete, keeping token ids, positions and the loss mask', async () => {
    const policy = createScriptedPolicy({ script: ['<think>find revenue</think>\n<search>acme revenue 2019</search>', '<think>enough</think>\n<search_complete>true</search_complete>'] });
    const engine = createMockSearchEngine({ pages });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: engine });
    const t = episode!.trajectory;
    expect(t.terminated).toBe('complete');
    expect(t.retrievedBasenames).toEqual(['acme_2.png']);
    expect(t.turns).toHaveLength(2);
    expect(t.turns[0]!.search).toMatchObject({ query: 'acme revenue 2019', chosenBasename: 'acme_2.png', chosenRank: 1, goldenRanks: [1] });
    expect(t.turns[0]!.observation).toContain('[page acme_2.png (200x100)]');
    expect(t.generatedText).toContain('<information>');
    expect(t.sampleId).toBe('g#0');
    checkTokenAccounting(t);
    // Observation tokens are in the sequence with mask 0.
    const infoId = policy.tokenizer.specialTokenId('<information>')!;
    const infoPosition = t.fullInputIds.indexOf(infoId, t.promptLength);
    expect(infoPosition).toBeGreaterThan(0);
    expect(t.lossMask[infoPosition]).toBe(0);
    expect(engine.calls).toEqual([{ query: 'acme revenue 2019', topK: 10 }]);
  });

  it('pages down the ranking when a query repeats, and says when nothing new is left', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue</search>', '<search>acme revenue</search>', '<search>acme revenue</search>', '<search>acme revenue</search>', '<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    const t = episode!.trajectory;
    expect(t.retrievedBasenames).toEqual(['acme_2.png', 'acme_3.png', 'acme_1.png']);
    expect(t.turns[3]!.observation).toMatch(/no further results/);
    expect(t.terminated).toBe('complete');
  });

  it('answers "no results" for an empty result list, without crashing', async () => {
    const policy = createScriptedPolicy({ script: ['<search>zebra</search>', '<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    expect(episode!.trajectory.turns[0]!.observation).toMatch(/no results for "zebra"/);
  });

  it('turns an invalid action into a corrective observation that counts against maxTurns', async () => {
    const policy = createScriptedPolicy({ script: ['I will just answer: 4.5B', '<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    const t = episode!.trajectory;
    expect(t.invalidActions).toBe(1);
    expect(t.turns[0]!.invalid?.reason).toBe('no_action');
    expect(t.turns[0]!.observation).toMatch(/Your previous action is invalid/);
    expect(policy.calls.append[0]!.tokens).toBeGreaterThan(0);
    expect(t.terminated).toBe('complete');
  });

  it('closes at maxTurns with a forced completion that is not policy output (mask 0)', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme</search>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) }, { config: { maxTurns: 3 } });
    const t = episode!.trajectory;
    expect(t.terminated).toBe('budget');
    expect(t.turns).toHaveLength(4);
    expect(t.turns[3]).toMatchObject({ forced: true, action: { type: 'search_complete' } });
    expect(t.generatedText.endsWith('<search_complete>true</search_complete>')).toBe(true);
    const lastId = t.fullInputIds[t.fullInputIds.length - 1]!;
    expect(policy.tokenizer.tokenText(lastId)).toBe('</search_complete>');
    expect(t.lossMask[t.lossMask.length - 1]).toBe(0);
    checkTokenAccounting(t);
  });

  it('ends with `context` when the sequence outgrows maxContextTokens', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) }, { config: { maxContextTokens: 700, maxTurns: 10 } });
    expect(episode!.trajectory.terminated).toBe('context');
    checkTokenAccounting(episode!.trajectory);
  });

  it('rejects a bbox outside the image as shown to the policy (not as stored)', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>', '<bbox>[50, 25, 150, 75]</bbox>', '<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }), imageOps: createRawImageOps() }, { config: { policyImageMaxSide: 100 } });
    const t = episode!.trajectory;
    expect(t.turns[0]!.observation).toContain('(100x50)');
    expect(t.turns[1]!.invalid?.reason).toBe('bbox_outside_image');
    expect(t.turns[1]!.observation).toMatch(/100x50/);
  });

  it('maps bbox coordinates back to source pixels', () => {
    // A 200x100 page shown at 100x50: [10, 10, 50, 30] is [20, 20, 100, 60] in the page.
    expect(mapToSource([10, 10, 50, 30], { region: [0, 0, 200, 100], shownWidth: 100, shownHeight: 50 })).toEqual([20, 20, 100, 60]);
    // A crop of region [20, 20, 100, 60] shown at 768x384: [0, 0, 384, 192] is its top-left quarter.
    expect(mapToSource([0, 0, 384, 192], { region: [20, 20, 100, 60], shownWidth: 768, shownHeight: 384 })).toEqual([20, 20, 60, 40]);
    expect(shownSize(200, 100, 100)).toEqual({ width: 100, height: 50 });
    expect(shownSize(200, 100, null)).toEqual({ width: 200, height: 100 });
  });

  it('records crops and crops of crops in source pixels', async () => {
    const policy = createScriptedPolicy({
      // The 80x40 crop is enlarged to 768x384 but shown, like every image, at most 100 wide: 100x50.
      script: ['<search>acme revenue 2019</search>', '<bbox>[10, 10, 50, 30]</bbox>', '<bbox>[0, 0, 50, 25]</bbox>', '<search_complete>true</search_complete>'],
    });
    const imageOps = createRawImageOps();
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }), imageOps }, { config: { policyImageMaxSide: 100, cropMinOutputSide: 768 } });
    const t = episode!.trajectory;
    expect(t.turns[1]!.crop).toEqual({ bbox: [10, 10, 50, 30], basename: 'acme_2.png', sourceRegion: [20, 20, 100, 60], shownWidth: 100, shownHeight: 50 });
    expect(t.turns[2]!.crop?.sourceRegion).toEqual([20, 20, 60, 40]);
    // Both crops were cut from the original page, not from the previous crop.
    expect(imageOps.calls.map((c) => [c.width, c.height, c.bbox])).toEqual([
      [200, 100, [20, 20, 100, 60]],
      [200, 100, [20, 20, 60, 40]],
    ]);
    expect(episode!.evidence.map((e) => e.kind)).toEqual(['page', 'crop', 'crop']);
    expect(episode!.evidence[1]!.image!.width).toBe(768);
    expect(t.evidence[1]).toMatchObject({ kind: 'crop', basename: 'acme_2.png', sourceRegion: [20, 20, 100, 60] });
  });

  it('clamps a mapped bbox to the page and stores whole pixels, the region that was cut', async () => {
    // A 1000x2998 page shown at 111x333: the full box maps to y2 = 2998.0000000000005 in floats.
    const tall = [{ basename: 'tall.png', text: 'acme revenue 2019', image: createRawImage(1000, 2998) }];
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>', '<bbox>[0, 0, 111, 333]</bbox>', '<bbox>[0.5, 0.5, 10.2, 10.7]</bbox>', '<search_complete>true</search_complete>'] });
    const imageOps = createRawImageOps();
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages: tall }), imageOps }, { config: { policyImageMaxSide: 333 } });
    const t = episode!.trajectory;
    expect(t.terminated).toBe('complete');
    expect(t.turns[1]!.crop?.sourceRegion).toEqual([0, 0, 1000, 2998]);
    const second = t.turns[2]!.crop!.sourceRegion;
    expect(second.every((v) => Number.isInteger(v))).toBe(true);
    expect(imageOps.calls.map((c) => c.bbox)).toEqual([t.turns[1]!.crop!.sourceRegion, second]);
  });

  it('treats a bbox before any image, or on a text-only page, as invalid ("search first")', async () => {
    const policy = createScriptedPolicy({ script: ['<bbox>[0, 0, 10, 10]</bbox>', '<search>forecast</search>', '<bbox>[0, 0, 10, 10]</bbox>', '<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }), imageOps: createRawImageOps() });
    const t = episode!.trajectory;
    expect(t.turns[0]!.invalid?.reason).toBe('bbox_no_image');
    expect(t.turns[0]!.observation).toMatch(/search first/);
    expect(t.turns[2]!.invalid?.reason).toBe('bbox_no_image');
  });

  it('ends only the failing episode with `error` when its search fails', async () => {
    const engine = createMockSearchEngine({ pages, failWith: (q) => (q.includes('boom') ? new Error('index offline') : undefined) });
    const policy = createScriptedPolicy({ script: [['<search>boom</search>'], ['<search>acme revenue 2019</search>', '<search_complete>true</search_complete>']] });
    const episodes = await runEpisodes(
      [
        { prompt, groupId: 'g', rolloutIndex: 0 },
        { prompt, groupId: 'g', rolloutIndex: 1 },
      ],
      { policy, searchEngine: engine },
    );
    expect(episodes[0]!.trajectory.terminated).toBe('error');
    expect(episodes[0]!.trajectory.error).toMatchObject({ stage: 'search' });
    expect(episodes[0]!.trajectory.error!.message).toMatch(/searchEngine 'mock' threw Error: index offline/);
    expect(episodes[1]!.trajectory.terminated).toBe('complete');
  });

  it('decodes every active rollout in one generateTurn call per turn', async () => {
    const policy = createScriptedPolicy({ script: [['<search>acme</search>', '<search_complete>true</search_complete>'], ['<search>acme</search>', '<search>revenue</search>', '<search_complete>true</search_complete>']] });
    await runEpisodes(
      [
        { prompt, groupId: 'g', rolloutIndex: 0 },
        { prompt, groupId: 'g', rolloutIndex: 1 },
      ],
      { policy, searchEngine: createMockSearchEngine({ pages }) },
    );
    expect(policy.calls.generateTurn.map((c) => c.rolloutIds)).toEqual([[0, 1], [0, 1], [1]]);
    expect(policy.calls.generateTurn[0]!.options.stopAfter).toContain('</search>');
  });

  it('rejects a policy answer in searcher mode and accepts it in answer mode', async () => {
    const script = ['<search>acme revenue 2019</search>', '<answer>4.5 billion dollars</answer>'];
    const [searcher] = await runEpisodes(one(), { policy: createScriptedPolicy({ script }), searchEngine: createMockSearchEngine({ pages }) }, { config: { maxTurns: 2 } });
    expect(searcher!.trajectory.turns[1]!.invalid?.reason).toBe('action_not_allowed');
    const [answer] = await runEpisodes(one(), { policy: createScriptedPolicy({ script }), searchEngine: createMockSearchEngine({ pages }) }, { config: { mode: 'answer' } });
    expect(answer!.trajectory.terminated).toBe('answer');
    expect(answer!.trajectory.finalAnswer).toBe('4.5 billion dollars');
  });

  it("refuses a bbox in answer mode, as Search-R1's format check does, and never advertises it", async () => {
    const script = ['<search>acme revenue 2019</search>', '<bbox>[0, 0, 10, 10]</bbox>', '<answer>4.5 billion dollars</answer>'];
    const imageOps = createRawImageOps();
    const [answer] = await runEpisodes(one(), { policy: createScriptedPolicy({ script }), searchEngine: createMockSearchEngine({ pages }), imageOps }, { config: { mode: 'answer' } });
    const t = answer!.trajectory;
    expect(t.turns[1]!.invalid?.reason).toBe('action_not_allowed');
    expect(t.turns[1]!.invalid?.message).toBe('<bbox> is not an action here; use <search> or <answer>');
    expect(t.turns[1]!.observation).not.toMatch(/bbox tag/);
    expect(imageOps.calls).toHaveLength(0);
    expect(ANSWER_INSTRUCTIONS).not.toMatch(/bbox|crop/i);
  });

  it('stops at an abort', async () => {
    const controller = new AbortController();
    const policy = createScriptedPolicy({
      script: (ctx) => {
        if (ctx.turn === 1) controller.abort();
        return '<search>acme</search>';
      },
    });
    await expect(runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) }, { signal: controller.signal })).rejects.toThrow(/abort/i);
  });
});

describe('completeWithGenerator', () => {
  it('appends the answer block with mask 0 and passes pages first, then crops', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>', '<bbox>[0, 0, 100, 50]</bbox>', '<search>overview</search>', '<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }), imageOps: createRawImageOps() });
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
    const completed = await completeWithGenerator(episode!, createMockGenerator({ failWith: () => new ProviderCallError({ port: 'generator', provider: 'x', message: 'quota', status: 429 }) }), { policy });
    expect(completed.trajectory.error).toMatchObject({ stage: 'generator' });
  });

  it('caps and deduplicates the evidence', () => {
    const e = (kind: 'page' | 'crop', basename: string) => ({ kind, basename, ...(kind === 'crop' && { sourceRegion: [0, 0, 1, 1] as const }) });
    const selected = selectEvidence([e('crop', 'a'), e('page', 'a'), e('page', 'a'), e('page', 'b'), e('crop', 'a')], 2);
    expect(selected.map((x) => `${x.kind}:${x.basename}`)).toEqual(['page:a', 'page:b']);
  });
});

describe('runEpisodes: robustness', () => {
  const two = (p: PromptRecord = prompt): EpisodeInstance[] => [
    { prompt: p, groupId: 'g', rolloutIndex: 0 },
    { prompt: p, groupId: 'g', rolloutIndex: 1 },
  ];

  it("gives each rollout its own token budget: a neighbour near its context limit does not cut it short", async () => {
    const long = `<think>${'x'.repeat(150)}</think><search>acme revenue 2019</search>`;
    const policy = createScriptedPolicy({ script: [[long, '<search_complete>true</search_complete>'], ['<search>acme</search>', '<search_complete>true</search_complete>']] });
    await runEpisodes(two(), { policy, searchEngine: createMockSearchEngine({ pages }) }, { config: { maxContextTokens: 900, maxTurnTokens: 256 } });
    const budgets = policy.calls.generateTurn[1]!.options.maxTokens as number[];
    expect(budgets).toHaveLength(2);
    expect(budgets[0]).toBeLessThan(budgets[1]!);
    expect(budgets[1]).toBe(256);
  });

  it('ends only the rollout whose policy output is malformed, and ends the session after everything settled', async () => {
    const policy = createScriptedPolicy({ script: [['<search>acme</search>', '<search_complete>true</search_complete>'], ['<search>acme</search>', '<search_complete>true</search_complete>']] });
    const order: string[] = [];
    interceptSessions(policy, (session) => ({
      generateTurn: async (rolloutIds, turnOptions) => {
        const outputs = await session.generateTurn(rolloutIds, turnOptions);
        return outputs.map((o) => (o.rolloutId === 1 ? { ...o, steps: [{ ...o.steps[0]!, logProb: 'bad' as unknown as number }] } : o));
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
      expect(e.trajectory.error!.message).toMatch(/policy 'scripted' threw Error: inference server returned 500/);
      expect(e.trajectory.retrievedBasenames).toHaveLength(1);
    }
  });

  it('ends with `context` instead of appending an observation that does not fit', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) }, { config: { maxContextTokens: 1000, maxTurns: 10 } });
    const t = episode!.trajectory;
    expect(t.terminated).toBe('context');
    // Everything the policy was given fits in the window (the forced and answer tokens are logged after it).
    expect(t.fullInputIds.length).toBeLessThanOrEqual(1000);
  });

  it('does not crop a page the policy no longer sees, nor a region smaller than a pixel', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>', '<bbox>[0, 0, 0.5, 0.5]</bbox>', '<search>forecast</search>', '<bbox>[0, 0, 10, 10]</bbox>', '<search_complete>true</search_complete>'] });
    const imageOps = createRawImageOps();
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }), imageOps });
    const t = episode!.trajectory;
    expect(t.turns[1]!.invalid?.reason).toBe('bbox_empty_area');
    expect(t.turns[3]!.invalid?.reason).toBe('bbox_no_image');
    expect(imageOps.calls).toHaveLength(0);
  });

  it('pages past topK when a query is repeated', async () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ basename: `p${i}.png`, text: `acme page ${i}` }));
    const policy = createScriptedPolicy({ script: [...Array(12).fill('<search>acme</search>'), '<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages: many }) }, { config: { searchTopK: 10, maxTurns: 13 } });
    expect(episode!.trajectory.retrievedBasenames).toEqual(many.map((p) => p.basename));
  });

  it('hands observation images to a text+image policy', async () => {
    const policy = createScriptedPolicy({ modalities: 'text+image', script: ['<search>acme revenue 2019</search>', '<bbox>[0, 0, 100, 50]</bbox>', '<search>forecast</search>', '<search_complete>true</search_complete>'] });
    await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }), imageOps: createRawImageOps() });
    expect(policy.calls.append.map((a) => a.images)).toEqual([1, 1, 0]);
    const text = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>', '<search_complete>true</search_complete>'] });
    await runEpisodes(one(), { policy: text, searchEngine: createMockSearchEngine({ pages }) });
    expect(text.calls.append.map((a) => a.images)).toEqual([0]);
  });

  it('shows a text+image policy no image after an invalid turn, not the previous one again', async () => {
    const policy = createScriptedPolicy({ modalities: 'text+image', script: ['<search>acme revenue 2019</search>', 'no action here', '<search_complete>true</search_complete>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }), imageOps: createRawImageOps() });
    expect(episode!.trajectory.turns[1]!.invalid).not.toBeNull();
    expect(policy.calls.append.map((a) => a.images)).toEqual([1, 0]);
  });

  it.each([
    [{ groupId: '', rolloutIndex: 0 }, 'instances[0].groupId'],
    [{ groupId: 'g', rolloutIndex: -1 }, 'instances[0].rolloutIndex'],
    [{ groupId: 'g', rolloutIndex: 0, prompt: { ...prompt, goldenBasenames: 'a.png' } }, 'instances[0].prompt.goldenBasenames'],
    [{ groupId: 'g', rolloutIndex: 0, prompt: { ...prompt, reference: 42 } }, 'instances[0].prompt.reference'],
  ])('validates instances: %j names %s', async (instance, argument) => {
    const policy = createScriptedPolicy({ script: ['<search_complete>true</search_complete>'] });
    await expect(runEpisodes([{ prompt, ...instance } as EpisodeInstance], { policy, searchEngine: createMockSearchEngine({ pages }) })).rejects.toThrow(new RegExp(argument.replace(/[.[\]]/g, '\\$&')));
  });

  it('refuses two instances with the same sample id', async () => {
    const policy = createScriptedPolicy({ script: ['<search_complete>true</search_complete>'] });
    await expect(runEpisodes([...one(), ...one()], { policy, searchEngine: createMockSearchEngine({ pages }) })).rejects.toThrow(/repeats sample 'g#0'/);
  });

  it('calls no generator in answer mode, even after the turn budget', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme</search>'] });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) }, { config: { mode: 'answer', maxTurns: 2 } });
    const generator = createMockGenerator({ answer: 'x' });
    await completeWithGenerator(episode!, generator, { policy, mode: 'answer' });
    expect(generator.calls).toHaveLength(0);
    expect(episode!.trajectory.terminated).toBe('budget');
  });
});
