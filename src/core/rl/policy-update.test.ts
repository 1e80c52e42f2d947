import { describe, expect, it } from 'vitest';
import { AbortedError } from '../errors';
import { createRandom } from '../random';
import type { LogProbBatch, LossFunction, PolicyBackend, UpdateResult } from '../../ports/policy-backend';
import { ppoClipLoss } from './__fixtures__/loss-settings';
import { trajectoryWith } from './__fixtures__/trajectories';
import {
  lengthBucketedBatches,
  sftExamples,
  sftLossFunction,
  updatePolicy,
  type PolicyUpdateSettings,
} from './policy-update';

/** The log-prob `trajectoryWith` records for a token id. */
const recorded = (tokenId: number) => -0.1 * (tokenId - 100);

/** A backend whose log-probs move by `shift(k)` at its k-th update; it evaluates the core's loss and keeps what it saw. */
function fakePolicy(shift: (update: number) => number) {
  const calls: Array<{
    batch: LogProbBatch;
    result: ReturnType<LossFunction>;
    atRecorded: ReturnType<LossFunction>;
    anticipated: number[][] | undefined;
  }> = [];
  const policy = {
    specificationVersion: 'v1',
    provider: 'fake',
    modalities: 'text',
    async update(batch: LogProbBatch, lossFn: LossFunction): Promise<UpdateResult> {
      const at = (delta: number) =>
        batch.positions.map((row, i) => row.map((p) => recorded(batch.inputIds[i]![p]!) + delta));
      const result = lossFn(at(shift(calls.length)));
      calls.push({ batch, result, atRecorded: lossFn(at(0)), anticipated: lossFn.anticipatedLogProbs });
      return { value: result.value, gradNorm: calls.length, applied: true, metrics: result.metrics! };
    },
  } as unknown as PolicyBackend;
  return { policy, calls };
}

const settings = (overrides: Partial<PolicyUpdateSettings> = {}): PolicyUpdateSettings => ({
  loss: ppoClipLoss(),
  ppoEpochs: 1,
  miniBatchSize: null,
  entropyCoef: 0,
  temperature: 1,
  ...overrides,
});

const five = () =>
  [0, 1, 2, 3, 4].map((i) => trajectoryWith(`g#${i}`, 10, [2 + i, 3 + i], i % 2 === 0 ? 1 : -1));

describe('updatePolicy', () => {
  it('runs ppoEpochs passes of shuffled minibatches, the last one partial, each sequence once per pass', async () => {
    const { policy, calls } = fakePolicy(() => 0);
    const summary = await updatePolicy(
      policy,
      [...five(), trajectoryWith('g#5', 10, [4], null)],
      settings({ ppoEpochs: 2, miniBatchSize: 2 }),
      { random: createRandom(1) },
    );
    expect(calls.map((c) => c.batch.inputIds.length)).toEqual([2, 2, 1, 2, 2, 1]);
    expect(summary).toMatchObject({ updates: 6, applied: 6, sequences: 5, tokens: 2 * 5 * 2, skipped: [] });
    const ids = (from: number, to: number) =>
      calls.slice(from, to).flatMap((c) => c.batch.inputIds.map((row) => row.length));
    // Each pass covers the five sequences (cut after their last policy token: lengths 4..8) exactly once.
    expect(ids(0, 3).sort()).toEqual([4, 5, 6, 7, 8]);
    expect(ids(3, 6).sort()).toEqual([4, 5, 6, 7, 8]);
    expect(summary.gradNorm).toBe(3.5);
    expect(summary.gradNormMax).toBe(6);
    // Only the first update trains the weights that sampled the tokens: its loss anticipates the
    // rollout's log-probs (an engine may run it in one pass); the others do not.
    expect(calls.map((c) => c.anticipated !== undefined)).toEqual([true, false, false, false, false, false]);
    expect(summary.corrected).toBe(0);
    expect(calls[0]!.anticipated).toEqual(
      calls[0]!.batch.positions.map((row, i) => row.map((p) => recorded(calls[0]!.batch.inputIds[i]![p]!))),
    );
  });

  it('counts the updates whose engine corrected an anticipated gradient', async () => {
    const { policy } = fakePolicy(() => 0);
    const update = policy.update.bind(policy);
    policy.update = async (batch, lossFn, options) => {
      const result = await update(batch, lossFn, options);
      return {
        ...result,
        metrics: { ...result.metrics, anticipationCorrected: lossFn.anticipatedLogProbs ? 1 : 0 },
      };
    };
    const summary = await updatePolicy(policy, five(), settings({ ppoEpochs: 2, miniBatchSize: 2 }), {
      random: createRandom(1),
    });
    expect(summary).toMatchObject({ updates: 6, corrected: 1 });
  });

  it('keeps the rollout log-probs as the old ones in every epoch: later epochs see ratio != 1, KL and clipping', async () => {
    const { policy, calls } = fakePolicy((k) => (k === 0 ? 0 : 0.5));
    const summary = await updatePolicy(policy, five(), settings({ ppoEpochs: 3 }), {
      random: createRandom(2),
    });
    // At the recorded log-probs the ratio is 1 in every call: the old log-probs were never refreshed.
    for (const c of calls) expect(c.atRecorded.metrics).toMatchObject({ kl: 0, clipFraction: 0 });
    expect(calls[0]!.result.metrics).toMatchObject({ kl: 0, clipFraction: 0 });
    for (const c of calls.slice(1)) {
      // exp(0.5) is past 1 + 0.2: the tokens with a positive advantage are clipped (6 of 10).
      expect(c.result.metrics!.clipFraction).toBeCloseTo(0.6, 12);
      expect(c.result.metrics!.kl).toBeCloseTo(Math.exp(-0.5) + 0.5 - 1, 12);
    }
    expect(summary.clipFraction).toBeCloseTo((2 * 0.6) / 3, 12);
    expect(summary.kl).toBeCloseTo((2 * (Math.exp(-0.5) + 0.5 - 1)) / 3, 12);
  });

  it("scores the KL against a frozen reference once per step with klReference 'initial', and needs one", async () => {
    const { policy, calls } = fakePolicy(() => 0);
    const scored: LogProbBatch[] = [];
    const reference = {
      async logProbs(batch: LogProbBatch) {
        scored.push(batch);
        return batch.positions.map((row) => row.map(() => -3));
      },
    };
    const initial = settings({
      ppoEpochs: 2,
      miniBatchSize: 2,
      loss: { ...settings().loss, klReference: 'initial' },
    });
    const summary = await updatePolicy(policy, five(), initial, { random: createRandom(4), reference });
    expect(scored).toHaveLength(1);
    expect(scored[0]!.inputIds).toHaveLength(5);
    expect(scored[0]!.temperature).toBe(1);
    // At the rollout's log-probs the KL is measured against the reference, not 0.
    for (const c of calls) expect(c.atRecorded.metrics!.kl).toBeGreaterThan(0);
    expect(summary.kl).toBeGreaterThan(0);
    await expect(updatePolicy(policy, five(), initial, { random: createRandom(4) })).rejects.toThrow(
      /reference/,
    );
  });

  it('with stateMasking false, also trains the observation tokens between policy tokens, their old log-probs scored by the policy before the update', async () => {
    const { policy, calls } = fakePolicy(() => 0);
    const scoredBy: LogProbBatch[] = [];
    // The policy before the update gives each observation token a log-prob of its own (-5).
    (policy as { logProbs: PolicyBackend['logProbs'] }).logProbs = async (batch) => {
      scoredBy.push(batch);
      return batch.positions.map((row, i) =>
        row.map((p) => (p === 2 || p === 6 || p === 7 ? recorded(batch.inputIds[i]![p]!) : -5)),
      );
    };
    const t = trajectoryWith('g#0', 10, [2, 6, 7], 1);
    await updatePolicy(
      policy,
      [t, trajectoryWith('g#1', 10, [2, 6, 7], -1)],
      settings({ stateMasking: false }),
      { random: createRandom(1) },
    );
    expect(scoredBy).toHaveLength(1);
    expect(calls[0]!.batch.positions[0]).toEqual([2, 3, 4, 5, 6, 7]);
    expect(calls[0]!.result.gradNewLogProbs[0]).toHaveLength(6);
    // The fake update scores observation tokens at their recorded-style values, not -5: the old log-probs
    // it compared with were the recomputed -5, so those tokens' ratios moved away from 1 (KL > 0).
    expect(calls[0]!.result.metrics!.kl).toBeGreaterThan(0);
    const { policy: masked, calls: maskedCalls } = fakePolicy(() => 0);
    await updatePolicy(masked, [t], settings(), { random: createRandom(1) });
    expect(maskedCalls[0]!.batch.positions[0]).toEqual([2, 6, 7]);
  });

  it('steps the optimizer on one token with a zero gradient where a minibatch has no signal (every advantage 0, no KL or entropy term)', async () => {
    const zero = () => [0, 1, 2, 3].map((i) => trajectoryWith(`z#${i}`, 10, [2 + i, 3 + i], 0));
    const { policy, calls } = fakePolicy(() => 0.3);
    const summary = await updatePolicy(policy, zero(), settings({ miniBatchSize: 2 }), {
      random: createRandom(4),
    });
    expect(calls).toHaveLength(2);
    for (const call of calls) {
      expect(call.batch.inputIds).toHaveLength(1);
      expect(call.batch.positions[0]).toHaveLength(1);
      expect(call.batch.inputIds[0]!.length).toBe(call.batch.positions[0]![0]! + 1);
      expect(call.result.gradNewLogProbs).toEqual([[0]]);
    }
    expect(summary).toMatchObject({ updates: 2, applied: 2, noSignal: 2, tokens: 0, loss: 0 });

    // One advantage that is not 0: the minibatch is scored whole.
    const { policy: mixed, calls: mixedCalls } = fakePolicy(() => 0.3);
    const some = await updatePolicy(mixed, [...zero(), trajectoryWith('s#0', 10, [4, 5], 1)], settings(), {
      random: createRandom(4),
    });
    expect(mixedCalls.map((c) => c.batch.inputIds.length)).toEqual([5]);
    expect(some).toMatchObject({ noSignal: 0, tokens: 10 });

    // A KL or an entropy term gives zeros a gradient: scored whole.
    for (const extra of [{ loss: ppoClipLoss({ klCoef: 0.1 }) }, { entropyCoef: 0.01 }]) {
      const { policy: other, calls: seen } = fakePolicy(() => 0.3);
      const again = await updatePolicy(other, zero(), settings(extra), { random: createRandom(4) });
      expect(seen.map((c) => c.batch.inputIds.length)).toEqual([4]);
      expect(again.noSignal).toBe(0);
    }
  });

  it('stops at an abort between minibatches', async () => {
    const controller = new AbortController();
    const { policy } = fakePolicy(() => {
      controller.abort();
      return 0;
    });
    await expect(
      updatePolicy(policy, five(), settings({ miniBatchSize: 2 }), {
        random: createRandom(3),
        signal: controller.signal,
      }),
    ).rejects.toThrow(AbortedError);
  });
});

describe('sftLossFunction', () => {
  it('is -mean logp, and declares the gradient it returns whatever the log-probs (engines may run it in one pass)', () => {
    const loss = sftLossFunction({ positions: [[1, 2], [3]] });
    const at = [[-1, -2], [-3]];
    const result = loss(at);
    expect(result.value).toBeCloseTo(2);
    expect(loss.constantGradient).toEqual([[-1 / 3, -1 / 3], [-1 / 3]]);
    expect(result.gradNewLogProbs).toEqual(loss.constantGradient);
    expect(loss([[-5, 0], [-0.5]]).gradNewLogProbs).toEqual(loss.constantGradient);
    // What the loss returns is a copy: a caller changing it does not change the declaration.
    result.gradNewLogProbs[0]![0] = 9;
    expect(loss.constantGradient![0]![0]).toBe(-1 / 3);
  });
});

describe('sftExamples', () => {
  it('scores mask-1 positions only (never position 0), cut after the last one; a trajectory without any is left out', () => {
    const first = trajectoryWith('g#0', 12, [0, 3, 4, 8], 1);
    const examples = sftExamples([
      first,
      trajectoryWith('g#1', 5, [], 1),
      trajectoryWith('g#2', 6, [1, 2], null),
    ]);
    expect(examples).toEqual([
      { inputIds: first.fullInputIds.slice(0, 9), positions: [3, 4, 8] },
      { inputIds: [100, 101, 102], positions: [1, 2] },
    ]);
  });

  it('names a trajectory whose loss mask does not match its tokens', () => {
    const t = trajectoryWith('g#0', 6, [2], 1);
    t.lossMask.pop();
    expect(() => sftExamples([trajectoryWith('g#1', 4, [1], 1), t])).toThrow(/trajectories\[1\]\.lossMask/);
  });

  it('SFT batches: every example once, similar lengths together, equal lengths in shuffled order', () => {
    const random = createRandom(3);
    const examples = Array.from({ length: 200 }, (_, i) => ({
      inputIds: Array.from({ length: 10 + (i % 40) }, () => 1),
    }));
    const batches = lengthBucketedBatches(examples, 8, random);
    expect(batches.flat().sort((a, b) => a - b)).toEqual(examples.map((_, i) => i));
    expect(batches.filter((b) => b.length !== 8)).toHaveLength(0);
    const padding = (list: number[][]) =>
      list.reduce(
        (n, b) =>
          n +
          b.length * Math.max(...b.map((i) => examples[i]!.inputIds.length)) -
          b.reduce((m, i) => m + examples[i]!.inputIds.length, 0),
        0,
      );
    const unsorted = Array.from({ length: 25 }, (_, k) =>
      Array.from({ length: 8 }, (_, j) => (k * 8 + j * 37) % 200),
    );
    expect(padding(batches)).toBeLessThan(padding(unsorted) / 4);
    // Ten demonstrations per prompt, all of one length: a batch mixes prompts.
    const same = Array.from({ length: 80 }, () => ({ inputIds: [1, 2, 3] }));
    const mixed = lengthBucketedBatches(same, 8, createRandom(4));
    expect(mixed.every((b) => new Set(b.map((i) => Math.floor(i / 10))).size > 1)).toBe(true);
  });
});
