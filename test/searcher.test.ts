import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createMemoryStore, createMockGenerator, createMockSearchEngine } from '../src/adapters/mock/index';
import { createRuleJudge } from '../src/adapters/rule-judge/index';
import { createScriptedPolicy } from '../src/adapters/scripted-policy/index';
import { createJsonlStore } from '../src/adapters/store/jsonl/index';
import { interceptSessions } from '../src/testing/sessions';
import {
  createSearcher,
  groupAdvantages,
  InvalidArgumentError,
  ProviderCallError,
  trajectoryFromJSON,
  type Judge,
  type PromptRecord,
} from '../src/index';

const pages = [
  { basename: 'acme_2.png', text: 'Acme revenue 2019 was 4.5 billion dollars' },
  { basename: 'globex_1.png', text: 'Globex revenue 2019 was 7 billion dollars' },
];
const prompts: PromptRecord[] = [
  {
    uid: 'acme',
    question: 'Acme revenue 2019?',
    reference: '4.5 billion dollars',
    goldenBasenames: ['acme_2.png'],
  },
  {
    uid: 'globex',
    question: 'Globex revenue 2019?',
    reference: '7 billion dollars',
    goldenBasenames: ['globex_1.png'],
  },
];
// Rollout 0 searches well, 1 searches the other company, 2 is invalid, 3 runs out of turns.
const script = [
  ['<think>a</think><search>{company} revenue 2019</search>', '<search_complete>true</search_complete>'],
  ['<think>b</think><search>{other} revenue</search>', '<search_complete>true</search_complete>'],
  ['no tags at all', '<search_complete>true</search_complete>'],
  ['<search>revenue</search>'],
];
const policyFor = () =>
  createScriptedPolicy({
    script: (ctx) => {
      const acme = ctx.context.includes('Acme');
      const turns = script[ctx.rolloutId % 4]!;
      return turns[Math.min(ctx.turn, turns.length - 1)]!.replace(
        '{company}',
        acme ? 'Acme' : 'Globex',
      ).replace('{other}', acme ? 'Globex' : 'Acme');
    },
  });
const facts = { 'acme_2.png': '4.5 billion dollars', 'globex_1.png': '7 billion dollars' };

describe('createSearcher', () => {
  it('collects B x n_agent scored episodes with group advantages', async () => {
    const searcher = createSearcher(
      {
        policy: policyFor(),
        searchEngine: createMockSearchEngine({ pages }),
        generator: createMockGenerator({ facts }),
        judge: createRuleJudge(),
      },
      { rl: { nAgent: 4 }, episode: { maxTurns: 3 } },
    );
    const batch = await searcher.collect(prompts, { step: 5 });
    expect(batch.episodes).toHaveLength(8);
    expect(batch.episodes.map((e) => e.trajectory.groupId)).toEqual([
      ...Array(4).fill('s5-b0-acme'),
      ...Array(4).fill('s5-b1-globex'),
    ]);
    const acme = batch.episodes.slice(0, 4).map((e) => e.trajectory);
    expect(acme.map((t) => t.terminated)).toEqual(['complete', 'complete', 'complete', 'budget']);
    expect(acme[0]!.reward).toBeCloseTo(0.8 * 1 + 0.2 * 1, 12);
    expect(acme[1]!.reward).toBe(0); // judged wrong, golden missed
    expect(acme[2]!.reward).toBe(0); // an invalid action fails the format gate
    expect(acme[3]!.reward).toBe(0); // never completed
    const expected = groupAdvantages(acme.map((t) => t.reward));
    expect(acme.map((t) => t.advantage)).toEqual(expected);
  });

  it('asks the frozen Generator only for episodes that passed the format gate; the others keep a reward of exactly 0', async () => {
    const generator = createMockGenerator({ facts });
    const searcher = createSearcher(
      {
        policy: policyFor(),
        searchEngine: createMockSearchEngine({ pages }),
        generator,
        judge: createRuleJudge(),
      },
      { rl: { nAgent: 4 }, episode: { maxTurns: 3 } },
    );
    const batch = await searcher.collect(prompts);
    // Per prompt, rollouts 0 and 1 complete validly; 2 (invalid action) and 3 (budget) fail the gate.
    expect(generator.calls).toHaveLength(4);
    const failed = batch.episodes.filter((e) => e.trajectory.rolloutIndex >= 2).map((e) => e.trajectory);
    expect(failed.map((t) => [t.reward, t.advantage === null])).toEqual(Array(4).fill([0, false]));
  });

  it('records a failed judge call as a missing reward, masked out of its group', async () => {
    let calls = 0;
    const flaky: Judge = {
      specificationVersion: 'v1',
      provider: 'flaky',
      async doScore() {
        calls++;
        if (calls === 1)
          throw new ProviderCallError({
            port: 'judge',
            provider: 'flaky',
            message: 'request timed out',
            status: 408,
          });
        return { score: 1 };
      },
    };
    const searcher = createSearcher(
      {
        policy: policyFor(),
        searchEngine: createMockSearchEngine({ pages }),
        generator: createMockGenerator({ facts }),
        judge: flaky,
      },
      { rl: { nAgent: 4 }, pipeline: { limits: { score: 1 } }, calls: { judge: { maxRetries: 0 } } },
    );
    const batch = await searcher.collect([prompts[0]!]);
    const [first] = batch.episodes;
    const rewards = batch.episodes.map((e) => e.trajectory.reward);
    expect(rewards[0]).toBeNull();
    expect(first!.trajectory.rewardDetail).toMatchObject({
      status: 'missing',
      cause: { stage: 'judge', kind: 'timeout' },
    });
    expect(first!.trajectory.advantage).toBeNull();
    expect(batch.missingRewards).toBe(1);
    expect(batch.episodes.slice(1).map((e) => e.trajectory.advantage)).toEqual(
      groupAdvantages(rewards.slice(1)),
    );
  });

  it('treats a judge score outside [0, 1] as a failed call, never as a score', async () => {
    const liar: Judge = {
      specificationVersion: 'v1',
      provider: 'liar',
      doScore: async () => ({ score: 10 }),
    };
    const searcher = createSearcher(
      {
        policy: policyFor(),
        searchEngine: createMockSearchEngine({ pages }),
        generator: createMockGenerator({ facts }),
        judge: liar,
      },
      { rl: { nAgent: 2 } },
    );
    const batch = await searcher.collect([prompts[0]!]);
    expect(batch.episodes[0]!.trajectory.rewardDetail).toMatchObject({
      status: 'missing',
      cause: { kind: 'invalid_output' },
    });
  });

  it('updates the policy with the configured loss over policy tokens only', async () => {
    const policy = policyFor();
    const searcher = createSearcher(
      {
        policy,
        searchEngine: createMockSearchEngine({ pages }),
        generator: createMockGenerator({ facts }),
        judge: createRuleJudge(),
      },
      { rl: { nAgent: 4 }, episode: { maxTurns: 3 } },
    );
    const batch = await searcher.collect(prompts);
    const result = await searcher.update(batch);
    expect(result.applied).toBe(0);
    expect(result.updates).toBe(1);
    expect(result.skipped).toEqual(['the scripted policy is not trainable']);
    const call = policy.calls.update[0]!;
    const included = batch.episodes.filter((e) => e.trajectory.advantage !== null);
    expect(call.sequences).toBe(included.length);
    // One gradient entry per policy token: observation and answer tokens are not scored.
    expect(call.gradNewLogProbs.map((row) => row.length)).toEqual(
      included.map((e) => e.trajectory.tokenSteps.length),
    );
    // At ratio 1 the GSPO loss is -mean(A) over sequences.
    const meanAdvantage = included.reduce((s, e) => s + e.trajectory.advantage!, 0) / included.length;
    expect(result.loss).toBeCloseTo(-meanAdvantage, 12);
  });

  it('writes trajectories and rewards to the store under the run', async () => {
    const store = createMemoryStore();
    const searcher = createSearcher(
      {
        policy: policyFor(),
        searchEngine: createMockSearchEngine({ pages }),
        generator: createMockGenerator({ facts }),
        judge: createRuleJudge(),
        store,
      },
      { rl: { nAgent: 2 } },
    );
    await searcher.collect(prompts, { runId: 'r1', step: 3 });
    const trajectories = await store.doQuery({ kind: 'trajectory', runId: 'r1', step: 3 });
    expect(trajectories).toHaveLength(4);
    expect(trajectories[0]).toMatchObject({ promptUid: 'acme', sampleId: 's3-b0-acme#0', rolloutIndex: 0 });
    expect(await store.doQuery({ kind: 'reward', runId: 'r1', sampleId: 's3-b1-globex#1' })).toHaveLength(1);
  });

  it('stores trajectories in JSONL that read back exactly', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-'));
    try {
      const store = createJsonlStore({ dir });
      const searcher = createSearcher(
        {
          policy: policyFor(),
          searchEngine: createMockSearchEngine({ pages }),
          generator: createMockGenerator({ facts }),
          judge: createRuleJudge(),
          store,
        },
        { rl: { nAgent: 2 } },
      );
      const batch = await searcher.collect(prompts, { runId: 'r2' });
      const rows = await store.doQuery({ kind: 'trajectory', runId: 'r2' });
      rows.forEach((row, i) =>
        expect(trajectoryFromJSON(row.data, i)).toEqual(batch.episodes[i]!.trajectory),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('says which port is missing', () => {
    expect(() =>
      createSearcher({ policy: policyFor(), searchEngine: createMockSearchEngine() }),
    ).toThrowError(InvalidArgumentError);
    expect(() => createSearcher({ policy: policyFor(), searchEngine: createMockSearchEngine() })).toThrow(
      /ports\.generator/,
    );
    expect(() =>
      createSearcher({
        policy: policyFor(),
        searchEngine: createMockSearchEngine(),
        generator: createMockGenerator(),
      }),
    ).toThrow(/ports\.judge/);
    expect(() =>
      createSearcher(
        {
          policy: policyFor(),
          searchEngine: createMockSearchEngine(),
          generator: createMockGenerator(),
          judge: createRuleJudge(),
        },
        { rl: { loss: { klReference: 'initial' } } },
      ),
    ).toThrow(/ports\.referencePolicy/);
  });
});

describe('createSearcher: the reward pipeline', () => {
  const ports = () => ({
    policy: policyFor(),
    searchEngine: createMockSearchEngine({ pages }),
    generator: createMockGenerator({ facts }),
    judge: createRuleJudge(),
  });

  it('gives the same rewards and advantages in every mode', async () => {
    const streaming = await createSearcher(ports(), { rl: { nAgent: 4 }, episode: { maxTurns: 3 } }).collect(
      prompts,
      { mode: 'streaming' },
    );
    const sync = await createSearcher(ports(), { rl: { nAgent: 4 }, episode: { maxTurns: 3 } }).collect(
      prompts,
      { mode: 'synchronous' },
    );
    const staged = await createSearcher(ports(), { rl: { nAgent: 4 }, episode: { maxTurns: 3 } }).collect(
      prompts,
      { mode: 'staged' },
    );
    const rewards = (batch: typeof streaming) => batch.episodes.map((e) => e.trajectory.reward);
    const advantages = (batch: typeof streaming) => batch.episodes.map((e) => e.trajectory.advantage);
    expect(rewards(streaming)).toEqual(rewards(sync));
    expect(rewards(streaming)).toEqual(rewards(staged));
    expect(advantages(streaming)).toEqual(advantages(sync));
    expect(streaming.pipeline).toMatchObject({
      mode: 'streaming',
      samplesTotal: 8,
      samplesScored: 8,
      promptsUsable: 2,
    });
    expect(sync.pipeline!.mode).toBe('synchronous');
  });

  it('stores a sample whose rollout never finished as a missing reward (nothing is lost)', async () => {
    const store = createMemoryStore();
    const slow: PromptRecord = {
      uid: 'slow',
      question: 'Acme revenue 2019?',
      reference: '4.5 billion dollars',
      goldenBasenames: ['acme_2.png'],
    };
    const policy = createScriptedPolicy({
      script: ['<search>acme revenue 2019</search>', '<search_complete>true</search_complete>'],
    });
    interceptSessions(policy, (session) => ({
      generateTurn: async (rolloutIds, turnOptions) => {
        // Rollout 1 is stuck on its second turn until the step deadline stops it.
        if (rolloutIds.includes(1) && policy.calls.generateTurn.length >= 1)
          await new Promise((_r, reject) =>
            turnOptions.signal?.addEventListener('abort', () => reject(turnOptions.signal!.reason)),
          );
        return session.generateTurn(rolloutIds, turnOptions);
      },
    }));
    const searcher = createSearcher(
      { ...ports(), policy, store },
      { rl: { nAgent: 2 }, pipeline: { deadlines: { stepTimeoutMs: 200 } }, reward: { weights: 'phase1' } },
    );
    const batch = await searcher.collect([slow], { runId: 'r', step: 1 });
    expect(batch.lostSamples).toHaveLength(2);
    expect(batch.lostSamples[0]).toMatchObject({
      sampleId: 's1-b0-slow#0',
      cause: { stage: 'episode', kind: 'deadline' },
    });
    const rewards = await store.doQuery({ kind: 'reward', runId: 'r' });
    expect(rewards.map((r) => r.sampleId)).toEqual(['s1-b0-slow#0', 's1-b0-slow#1']);
    expect(rewards[0]!.data).toMatchObject({
      reward: null,
      detail: { status: 'missing', cause: { kind: 'deadline' } },
    });
  });

  it('retries a failed store write after the step, and hands back the batch if it fails again', async () => {
    const flaky = createMemoryStore();
    const append = flaky.doAppend.bind(flaky);
    let failures = 1;
    flaky.doAppend = async (records, options) => {
      if (failures-- > 0) throw new Error('disk full');
      return append(records, options);
    };
    await createSearcher({ ...ports(), store: flaky }, { rl: { nAgent: 2 } }).collect(prompts, {
      runId: 'r',
    });
    expect(await flaky.doQuery({ kind: 'trajectory', runId: 'r' })).toHaveLength(4);

    const broken = createMemoryStore();
    broken.doAppend = async () => {
      throw new Error('read-only file system');
    };
    const error = (await createSearcher({ ...ports(), store: broken }, { rl: { nAgent: 2 } })
      .collect(prompts, { runId: 'r' })
      .catch((e: unknown) => e)) as Error & { batch?: { episodes: unknown[] } };
    expect(error).toMatchObject({ port: 'store', provider: 'memory' });
    expect(error.message).toMatch(/could not record 2 group\(s\).*read-only file system/);
    expect(error.batch!.episodes).toHaveLength(4);
  });

  it('applies per-port caps from the configuration', async () => {
    let inFlight = 0;
    let peak = 0;
    const judge: Judge = {
      specificationVersion: 'v1',
      provider: 'counted',
      async doScore() {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 2));
        inFlight--;
        return { score: 1 };
      },
    };
    await createSearcher(
      { ...ports(), judge },
      { rl: { nAgent: 4 }, calls: { judge: { maxConcurrent: 2 } } },
    ).collect(prompts);
    expect(peak).toBe(2);
  });
});
