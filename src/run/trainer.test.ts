import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createMemoryStore, createMockGenerator, createMockSearchEngine } from '../adapters/mock/index';
import { createScriptedPolicy } from '../adapters/scripted-policy/index';
import { createJsonlStore } from '../adapters/store/jsonl/index';
import { createTfjsPolicy, type TfjsPolicy } from '../adapters/tfjs/policy';
import { runEpisodes } from '../core/episode/run-episodes';
import { createRandom } from '../core/random';
import { currentRecords } from '../core/store/records';
import { expandGroups } from '../core/rl/groups';
import { runSft, sftExamples } from '../core/rl/policy-update';
import type { Store } from '../ports/store';
import { createSearcher } from '../searcher';
import { TIMING_METRICS, type StepMetrics } from './step-metrics';
import { readPolicyCheckpoint, writePolicyCheckpoint } from './checkpoints';
import { createTrainer, type TrainerSettings } from './trainer';

/**
 * The toy task: the prompt names a keyword; the policy must search for exactly it and then finish.
 * The reward is phase 1's (docs/method.md#reward-presets): 0.1 + 0.9 * NDCG of the keyword's page if the policy itself
 * completed (the format gate), else 0.
 */
const KEYWORDS = ['apple', 'river', 'cloud', 'stone', 'tiger'];
const pages = KEYWORDS.map((k) => ({ basename: `${k}.png`, text: `${k} facts` }));
const prompts = KEYWORDS.map((k) => ({ uid: k, question: k, goldenBasenames: [`${k}.png`], reference: k }));
const episode = {
  maxTurns: 2,
  maxTurnTokens: 10,
  maxContextTokens: 96,
  observationMaxChars: 12,
  instructions: '',
};

const policies: TfjsPolicy[] = [];
async function tinyPolicy(
  seed: number,
  overrides: { learningRate?: number; width?: number; layers?: number; heads?: number } = {},
): Promise<TfjsPolicy> {
  const policy = await createTfjsPolicy({
    model: {
      layers: overrides.layers ?? 1,
      width: overrides.width ?? 16,
      heads: overrides.heads ?? 2,
      contextLength: 96,
    },
    seed,
    backend: 'wasm',
    optimizer: { learningRate: overrides.learningRate ?? 1e-3, weightDecay: 0 },
  });
  policies.push(policy);
  return policy;
}
afterAll(() => {
  for (const p of policies) p.dispose();
});

function toySearcher(
  policy: TfjsPolicy,
  options: { rl?: Record<string, unknown>; temperature?: number } = {},
) {
  return createSearcher(
    {
      policy,
      searchEngine: createMockSearchEngine({ pages }),
      generator: createMockGenerator({ facts: {} }),
    },
    // Seed 000's phase-1 reward: 0.1 + 0.9 * NDCG when the format passes, else 0.
    {
      episode: { ...episode, temperature: options.temperature ?? 1 },
      reward: { weights: 'phase1' },
      rl: { nAgent: 4, ...options.rl },
      pipeline: { limits: { rollout: 8 } },
    },
  );
}

/**
 * Demonstrations of the format, not of the answer: for each prompt, one search of every keyword,
 * then as many of random keywords. They give every keyword some probability under every prompt
 * (GRPO can only reinforce what it samples) without telling which one is right.
 */
async function formatDemonstrations(keywords: readonly string[], data: typeof prompts) {
  const random = createRandom(11);
  const seen = new Map<string, number>();
  const script = createScriptedPolicy({
    script: ({ turn, context }) => {
      if (turn > 0) return '<search_complete>true</search_complete>';
      const n = seen.get(context) ?? 0;
      seen.set(context, n + 1);
      return `<search>${n < keywords.length ? keywords[n] : keywords[random.nextInt(keywords.length)]}</search>`;
    },
  });
  const demos = await runEpisodes(
    expandGroups(data, 2 * keywords.length),
    { policy: script, searchEngine: createMockSearchEngine({ pages }) },
    { config: episode },
  );
  return sftExamples(demos.map((d) => d.trajectory));
}

const withoutTiming = (m: StepMetrics) => {
  const copy: Record<string, unknown> = { ...m };
  for (const key of TIMING_METRICS) delete copy[key];
  return copy;
};

describe('createTrainer', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });
  const settings = (over: Partial<TrainerSettings> = {}): TrainerSettings => ({
    runId: 'toy',
    steps: 5,
    batchSize: 2,
    saveFreq: 2,
    seed: 3,
    ...over,
  });

  it('resumes exactly: no step run twice or skipped, across epoch boundaries, from auto or a path', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-trainer-'));
    dirs.push(dir);
    // Three prompts, two per step: steps 2, 4 and 5 start or cross an epoch boundary.
    const data = prompts.slice(0, 3);
    const run = async (store: Store, policySeed: number, over: Partial<TrainerSettings>) => {
      const trainer = createTrainer({
        searcher: toySearcher(await tinyPolicy(policySeed)),
        store,
        prompts: data,
        settings: settings(over),
      });
      return trainer.run();
    };
    const straight = await run(createJsonlStore({ dir: join(dir, 'a') }), 1, {});
    expect(straight.steps.map((m) => m.step)).toEqual([1, 2, 3, 4, 5]);
    expect(straight.steps.map((m) => m.epoch)).toEqual([0, 0, 1, 2, 2]);
    expect(straight.checkpoints).toEqual([
      'checkpoints/step-00000000',
      'checkpoints/step-00000002',
      'checkpoints/step-00000004',
      'checkpoints/step-00000005',
    ]);

    const storeB = createJsonlStore({ dir: join(dir, 'b') });
    // Every checkpoint kept (keepLast null), so that a branch below can start from step 2.
    const first = await run(storeB, 1, { steps: 3, keepLast: null });
    expect(first.steps.map((m) => m.step)).toEqual([1, 2, 3]);
    // A fresh process: a policy with other weights, the same run id; resume picks the latest checkpoint.
    const second = await run(storeB, 99, { keepLast: null });
    expect(second.retention?.kept.map((c) => c.step)).toEqual([0, 2, 3, 4, 5]);
    expect(second.resumedFrom).toEqual({ key: 'toy/checkpoints/step-00000003', step: 3 });
    expect(second.steps.map((m) => m.step)).toEqual([4, 5]);
    expect([...first.steps, ...second.steps].map(withoutTiming)).toEqual(straight.steps.map(withoutTiming));
    const stored = await storeB.doQuery({ kind: 'metric', runId: 'toy' });
    expect(stored.map((r) => r.step)).toEqual([1, 2, 3, 4, 5]);
    expect(
      (await storeB.doQuery({ kind: 'event', runId: 'toy' }))
        .map((r) => r.data)
        .filter((d) => (d as { type: string }).type === 'resume'),
    ).toEqual([{ type: 'resume', from: 'toy/checkpoints/step-00000003', nextStep: 4 }]);

    // From an explicit path (another run's checkpoint), into a new run.
    const fromPath = await run(storeB, 7, { runId: 'branch', resumeMode: 'toy/checkpoints/step-00000002' });
    expect(fromPath.resumedFrom).toEqual({ key: 'toy/checkpoints/step-00000002', step: 2 });
    expect(fromPath.steps.map(withoutTiming)).toEqual(straight.steps.slice(2).map(withoutTiming));

    // `disable` starts over.
    const fresh = await run(storeB, 1, { resumeMode: 'disable', steps: 1 });
    expect(fresh.resumedFrom).toBeNull();
    expect(withoutTiming(fresh.steps[0]!)).toEqual(withoutTiming(straight.steps[0]!));
    // Its restart event counts the records it supersedes; readers keep the latest attempt's.
    const events = await storeB.doQuery({ kind: 'event', runId: 'toy' });
    // The unified log's events are there too; the restart event is the last of its kind.
    expect(
      events.filter((e) => ['resume', 'restart'].includes((e.data as { type: string }).type)).at(-1)?.data,
    ).toMatchObject({
      type: 'restart',
      nextStep: 1,
      superseded: { metric: { 1: 1, 2: 1, 3: 1, 4: 1, 5: 1 } },
    });
    expect(
      currentRecords(await storeB.doQuery({ kind: 'metric', runId: 'toy' }), events).map((r) =>
        withoutTiming(r.data as StepMetrics),
      ),
    ).toEqual([withoutTiming(straight.steps[0]!)]);
  }, 120_000);

  it('refuses a resume that cannot be exact, naming the setting', async () => {
    const store = createMemoryStore();
    await createTrainer({
      searcher: toySearcher(await tinyPolicy(1)),
      store,
      prompts,
      settings: settings({ steps: 1 }),
    }).run();
    const other = createTrainer({
      searcher: toySearcher(await tinyPolicy(1)),
      store,
      prompts,
      settings: settings({ batchSize: 3 }),
    });
    await expect(other.run()).rejects.toThrow(/settings.batchSize.*made with 2, this run has 3/);
    const otherData = createTrainer({
      searcher: toySearcher(await tinyPolicy(1)),
      store,
      prompts: prompts.slice(1),
      settings: settings(),
    });
    await expect(otherData.run()).rejects.toThrow(/settings.prompts/);
    const badPath = createTrainer({
      searcher: toySearcher(await tinyPolicy(1)),
      store,
      prompts,
      settings: settings({ resumeMode: 'step-3' }),
    });
    await expect(badPath.run()).rejects.toThrow(/resumeMode.*checkpoint path/);
    const missing = createTrainer({
      searcher: toySearcher(await tinyPolicy(1)),
      store,
      prompts,
      settings: settings({ resumeMode: 'checkpoints/step-00000009' }),
    });
    await expect(missing.run()).rejects.toThrow(/no checkpoint at 'toy\/checkpoints\/step-00000009'/);
    expect(() =>
      createTrainer({
        searcher: toySearcher(policies[0]!),
        store,
        prompts,
        settings: settings({ saveFreq: 0 }),
      }),
    ).toThrow(/createTrainer.saveFreq/);
    expect(() =>
      createTrainer({ searcher: toySearcher(policies[0]!), store, prompts: [], settings: settings() }),
    ).toThrow(/prompts/);
  }, 60_000);

  it('refuses a checkpoint whose RNG state, step and cursor or data stamp cannot be read back, naming it', async () => {
    const store = createMemoryStore();
    const policy = await tinyPolicy(1);
    await createTrainer({
      searcher: toySearcher(policy),
      store,
      prompts,
      settings: settings({ steps: 1 }),
    }).run();
    const { state } = await readPolicyCheckpoint(store, 'toy', 'checkpoints/step-00000001');
    const { policy: _policy, ...good } = state;
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...good, random: [1, 2, 3] }, /checkpoint\.random/],
      [{ ...good, random: [1, 2, 3, 2 ** 32] }, /checkpoint\.random/],
      [{ ...good, cursor: { epoch: 0 } }, /checkpoint\.cursor/],
      [{ ...good, step: -1 }, /checkpoint\.cursor/],
      [{ ...good, dataset: null }, /settings\.prompts/],
    ];
    for (const [step, [bad, error]] of cases.entries()) {
      await writePolicyCheckpoint(store, 'toy', 2 + step, await policy.save(), bad);
      const resumed = createTrainer({ searcher: toySearcher(policy), store, prompts, settings: settings() });
      await expect(resumed.run()).rejects.toThrow(error);
    }
  }, 60_000);

  it('refuses to run again after a step failed midway (the policy may have changed)', async () => {
    const policy = await tinyPolicy(4);
    const update = policy.update.bind(policy);
    let calls = 0;
    policy.update = async (...args) => {
      if (++calls === 2) throw new Error('transient failure');
      return update(...args);
    };
    const trainer = createTrainer({
      searcher: toySearcher(policy, { rl: { miniBatchSize: 2 } }),
      store: createMemoryStore(),
      prompts,
      settings: settings({ steps: 2 }),
    });
    await expect(trainer.run()).rejects.toThrow(/transient failure/);
    await expect(trainer.run()).rejects.toThrow(/an earlier run\(\) failed during step 1.*resumeMode 'auto'/);
  }, 60_000);

  it('reports the step metrics', async () => {
    const store = createMemoryStore();
    // Two epochs: the second scores the updated policy against the rollout's log-probs, so the
    // ratio has moved off 1 and the KL and the clip fraction are measured, not 0 by construction.
    // A few epochs of SFT on the format first: a random policy fails the format gate everywhere, and
    // a batch of equal rewards has no advantage to move the policy with.
    const policy = await tinyPolicy(7, { width: 32, layers: 2, heads: 4, learningRate: 3e-3 });
    await runSft(
      policy,
      await formatDemonstrations(KEYWORDS, prompts),
      { epochs: 12, batchSize: 8 },
      { random: createRandom(5) },
    );
    const trainer = createTrainer({
      searcher: toySearcher(policy, { rl: { ppoEpochs: 2 } }),
      store,
      prompts,
      settings: settings({ steps: 1, batchSize: 5 }),
    });
    expect(
      trainer
        .peekBatch()
        .map((p) => p.uid)
        .sort(),
    ).toEqual([...KEYWORDS].sort());
    const [m] = (await trainer.run()).steps;
    expect(m).toMatchObject({
      step: 1,
      prompts: 5,
      episodes: 20,
      missingRewards: 0,
      successRate: null,
      updatesApplied: 2,
      updatesSkipped: 0,
    });
    expect(m!.rewardStd).toBeGreaterThan(0);
    expect(m!.kl).toBeGreaterThan(0);
    expect(m!.clipFraction).toBeGreaterThan(0);
    for (const key of [
      'rewardMean',
      'ndcgMean',
      'turnsMean',
      'invalidActionRate',
      'clipFraction',
      'kl',
      'entropy',
      'gradNorm',
      'rolloutTokensPerSecond',
      'trainTokensPerSecond',
    ] as const) {
      expect(Number.isFinite(m![key]), key).toBe(true);
    }
    expect(m!.rolloutTokens).toBeGreaterThan(0);
    expect(m!.trainTokens).toBeGreaterThan(0);
    expect(trainer.step).toBe(1);
  }, 60_000);

  it('GRPO raises the toy task reward from below 0.3 to above 0.75 (seeded)', async () => {
    // SFT on demonstrations of the format that search a random keyword, then GRPO (GSPO loss).
    const policy = await tinyPolicy(7, { width: 32, layers: 2, heads: 4, learningRate: 3e-3 });
    const sft = await runSft(
      policy,
      await formatDemonstrations(KEYWORDS, prompts),
      { epochs: 30, batchSize: 8 },
      { random: createRandom(5) },
    );
    expect(sft.epochLoss[sft.epochLoss.length - 1]).toBeLessThan(sft.epochLoss[0]! / 10);
    policy.resetOptimizer({ learningRate: 1e-3, warmupSteps: 10 });
    const searcher = toySearcher(policy, { rl: { nAgent: 8 }, temperature: 0.7 });
    const trainer = createTrainer({
      searcher,
      store: createMemoryStore(),
      prompts,
      settings: { runId: 'grpo', steps: 300, batchSize: 5, saveFreq: 1000, seed: 3 },
    });
    const rewards: number[] = [];
    const controller = new AbortController();
    let reachedAt = -1;
    await trainer
      .run({
        signal: controller.signal,
        onStep: (m) => {
          rewards.push(m.rewardMean ?? 0);
          // Done once the mean reward of the last 5 steps (200 rollouts) is above 0.75: four of the
          // five keywords found. The fifth is found on some seeds and float roundings and not on
          // others (at temperature 0.7 a keyword the policy has given to another prompt is rarely
          // sampled again), so the test does not ask for it.
          const recent = rewards.slice(-5);
          if (recent.length === 5 && recent.reduce((a, b) => a + b, 0) / 5 > 0.75) {
            reachedAt = m.step;
            controller.abort();
          }
        },
      })
      .catch((error: unknown) => {
        if (!controller.signal.aborted) throw error;
      });
    const firstFive = rewards.slice(0, 5).reduce((a, b) => a + b, 0) / 5;
    expect(firstFive).toBeLessThan(0.3);
    expect(
      reachedAt,
      `mean reward of the last 5 steps stayed at or below 0.75 for 300 steps (last: ${rewards.slice(-5).join(', ')})`,
    ).toBeGreaterThan(0);
  }, 600_000);
});
