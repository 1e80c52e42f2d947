import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createToyPolicies,
  formatDemonstrations,
  KEYWORDS,
  prompts,
  toySearcher,
} from '../../test/support/toy-task';
import { createMemoryStore } from '../adapters/mock/index';
import { createJsonlStore } from '../adapters/store/jsonl/index';
import { createRandom } from '../core/random';
import { currentRecords } from '../core/store/records';
import { runSft } from '../core/rl/policy-update';
import type { Store } from '../ports/store';
import { TIMING_METRICS, type StepMetrics } from './step-metrics';
import { readPolicyCheckpoint, writePolicyCheckpoint } from './checkpoints';
import { createTrainer, type TrainerSettings } from './trainer';

// The toy task (test/support/toy-task.ts); that GRPO learns it is src/run/trainer.e2e.test.ts.
const { policies, tinyPolicy, dispose } = createToyPolicies();
afterAll(dispose);

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
});
