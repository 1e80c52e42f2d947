import type * as Ort from 'onnxruntime-node';
import { describe, expect, it, vi } from 'vitest';
import { sftLossFunction } from '../../../core/rl/policy-update';
import type { LogProbBatch, LossFunction } from '../../../ports/policy-backend';
import { useTinyPolicies } from '../../tfjs/__fixtures__/tiny-policy';
import { createOnnxTrainingEngine } from './onnx-training';

const tiny = useTinyPolicies();

/** Rows of different lengths (right padding), repeated tokens (the embedding scatter adds), scored places spread out. */
const BATCH: LogProbBatch = {
  inputIds: [
    [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5],
    [2, 7, 1, 8],
    [1, 1, 2, 3, 5, 8, 13, 21],
    [9, 9, 9, 4, 4, 1],
  ],
  positions: [[1, 4, 7, 10], [2, 3], [1, 2, 3, 6, 7], [5]],
  temperature: 0.7,
};

/** A loss whose g differs per token and depends on the new log-probs (as PPO/GSPO do). */
const lossFn: LossFunction = (newLogProbs) => ({
  value: newLogProbs.flat().reduce((a, b) => a + b, 0),
  gradNewLogProbs: newLogProbs.map((row, i) =>
    row.map((lp, t) => ((i + 1) * (t % 2 === 0 ? 1 : -0.5)) / 10 + 0.01 * lp),
  ),
  metrics: { probe: newLogProbs.length },
});

/** max over tensors of max|a - b| / max|b|. */
function worstRelativeGap(
  a: Record<string, Float32Array>,
  b: Record<string, Float32Array>,
): { name: string; gap: number } {
  let worst = { name: '', gap: 0 };
  for (const [name, expected] of Object.entries(b)) {
    const actual = a[name]!;
    expect(actual.length).toBe(expected.length);
    const scale = Math.max(...expected.map(Math.abs), 1e-12);
    let gap = 0;
    for (let i = 0; i < expected.length; i++) gap = Math.max(gap, Math.abs(actual[i]! - expected[i]!));
    if (gap / scale > worst.gap) worst = { name, gap: gap / scale };
  }
  return worst;
}

describe('training through ONNX Runtime', () => {
  for (const maxAttentionElements of [16_000_000, 2 * 11 * 11]) {
    const chunks = maxAttentionElements > 1000 ? 'one chunk' : 'a chunk per row';
    it(`gradients equal the tfjs ones (temperature 0.7, entropy bonus, ${chunks})`, async () => {
      const viaTfjs = await tiny({ seed: 9, maxAttentionElements });
      const viaOnnx = await tiny({ seed: 9, maxAttentionElements, training: 'onnx' });
      for (const entropyCoef of [0, 0.05]) {
        const expected = await viaTfjs.gradients(BATCH, lossFn, { entropyCoef });
        const actual = await viaOnnx.gradients(BATCH, lossFn, { entropyCoef });
        expect(actual.value).toBeCloseTo(expected.value, 4);
        expect(Object.keys(actual.gradients)).toEqual(Object.keys(expected.gradients));
        expect(worstRelativeGap(actual.gradients, expected.gradients).gap).toBeLessThan(1e-4);
      }
    });
  }

  it('gradients are the same when the kept activations exceed their budget (each forward runs again)', async () => {
    // A chunk per row; a budget of 0 drops every chunk's kept activations, so each backward runs its forward first.
    const settings = { seed: 9, maxAttentionElements: 2 * 11 * 11, training: 'onnx' as const };
    const kept = await tiny(settings);
    const dropped = await tiny(settings, { onnxKeptActivationBytes: 0 });
    for (const entropyCoef of [0, 0.05]) {
      const expected = await kept.gradients(BATCH, lossFn, { entropyCoef });
      const actual = await dropped.gradients(BATCH, lossFn, { entropyCoef });
      expect(actual.value).toBeCloseTo(expected.value, 5);
      expect(worstRelativeGap(actual.gradients, expected.gradients).gap).toBeLessThan(1e-6);
    }
  });

  it('gradients do not depend on the intra-op thread count (a long batch of repeated tokens)', async () => {
    // Long enough that ONNX Runtime splits operators across threads; few distinct tokens, so the
    // embedding's gradient adds many rows per token (a scatter with reduction lost some at 2 threads).
    const rows = Array.from({ length: 8 }, (_, r) =>
      Array.from({ length: 256 }, (_, t) => ((t * (r + 3)) % 7) + 1),
    );
    const long: LogProbBatch = {
      inputIds: rows,
      positions: rows.map(() => Array.from({ length: 192 }, (_, k) => 64 + k)),
      temperature: 1,
    };
    const settings = {
      seed: 4,
      model: { layers: 1, width: 128, heads: 4, contextLength: 256 },
      training: 'onnx' as const,
    };
    const one = await tiny({ ...settings, onnx: { intraOpThreads: 1 } });
    const two = await tiny({ ...settings, onnx: { intraOpThreads: 2 } });
    // Training's own count (`trainingThreads`), rollouts kept at one thread.
    const trainingTwo = await tiny({ ...settings, onnx: { intraOpThreads: 1, trainingThreads: 2 } });
    const expected = await one.gradients(long, lossFn, { entropyCoef: 0.05 });
    for (let run = 0; run < 3; run++) {
      for (const policy of [two, trainingTwo]) {
        const actual = await policy.gradients(long, lossFn, { entropyCoef: 0.05 });
        expect(worstRelativeGap(actual.gradients, expected.gradients).gap).toBeLessThan(1e-5);
      }
    }
  });

  for (const [lanes, maxAttentionElements, keptBytes] of [
    [2, 16_000_000, undefined],
    [3, 16_000_000, undefined],
    [3, 2 * 11 * 11, undefined],
    [2, 16_000_000, 0],
  ] as const) {
    const chunks = maxAttentionElements > 1000 ? 'one chunk' : 'a chunk per row';
    const kept = keptBytes === 0 ? ', nothing kept' : '';
    it(`gradients on ${lanes} lanes (worker threads) equal one lane's (${chunks}${kept})`, async () => {
      const settings = { seed: 9, maxAttentionElements, training: 'onnx' as const };
      const options = keptBytes === undefined ? {} : { onnxKeptActivationBytes: keptBytes };
      const one = await tiny(settings, options);
      const many = await tiny({ ...settings, onnx: { intraOpThreads: 1, trainingLanes: lanes } }, options);
      for (const entropyCoef of [0, 0.05]) {
        const expected = await one.gradients(BATCH, lossFn, { entropyCoef });
        const actual = await many.gradients(BATCH, lossFn, { entropyCoef });
        expect(actual.value).toBeCloseTo(expected.value, 5);
        expect(worstRelativeGap(actual.gradients, expected.gradients).gap).toBeLessThan(1e-6);
      }
      // Updates: the lanes get the new weights after each step.
      for (let step = 0; step < 3; step++) {
        const [a, b] = [await many.update(BATCH, lossFn), await one.update(BATCH, lossFn)];
        expect(a.value).toBeCloseTo(b.value, 4);
      }
      const [a, b] = [await many.logProbs(BATCH), await one.logProbs(BATCH)];
      a.forEach((row, i) => row.forEach((lp, t) => expect(Math.abs(lp - b[i]![t]!)).toBeLessThan(1e-4)));
    });
  }

  for (const [lanes, maxAttentionElements] of [
    [1, 16_000_000],
    [1, 2 * 11 * 11],
    [2, 2 * 11 * 11],
  ] as const) {
    const chunks = maxAttentionElements > 1000 ? 'one chunk' : 'a chunk per row';
    it(`a supervised loss (constant gradient) gives the two passes' gradients in one run a chunk (${lanes} lane${lanes > 1 ? 's' : ''}, ${chunks})`, async () => {
      const settings = { seed: 9, maxAttentionElements, training: 'onnx' as const };
      const policy = await tiny({ ...settings, onnx: { intraOpThreads: 1, trainingLanes: lanes } });
      const sft = sftLossFunction(BATCH);
      // Undeclared, the same loss runs as an RL loss does: every forward, then the backwards.
      const undeclared: LossFunction = (logProbs) => sft(logProbs);
      const real = (await import('onnxruntime-node')) as unknown as typeof Ort & { default?: typeof Ort };
      const created = vi.spyOn((real.InferenceSession ? real : real.default!).InferenceSession, 'create');
      for (const entropyCoef of [0, 0.05]) {
        const before = created.mock.calls.length;
        const expected = await policy.gradients(BATCH, undeclared, { entropyCoef });
        // The two passes' sessions were made with the engine: the undeclared loss makes none.
        expect(created.mock.calls.length).toBe(before);
        const actual = await policy.gradients(BATCH, sft, { entropyCoef });
        expect(actual.value).toBe(expected.value);
        expect(worstRelativeGap(actual.gradients, expected.gradients).gap).toBe(0);
      }
      // The one-run session: made once, on this thread's lane at its first step (workers make theirs at start).
      expect(created).toHaveBeenCalledTimes(1);
      created.mockRestore();
    });
  }

  for (const lanes of [1, 2]) {
    it(`an RL loss anticipating its log-probs gives the two passes' gradients: one run a chunk at the policy's own, a second where they are off (${lanes} lane${lanes > 1 ? 's' : ''})`, async () => {
      const settings = { seed: 9, maxAttentionElements: 2 * 11 * 11, training: 'onnx' as const };
      const policy = await tiny({ ...settings, onnx: { intraOpThreads: 1, trainingLanes: lanes } });
      const own = await policy.logProbs(BATCH);
      const anticipating = (anticipated: number[][]): LossFunction =>
        Object.assign((logProbs: number[][]) => lossFn(logProbs), { anticipatedLogProbs: anticipated });
      const off = own.map((row) => row.map((lp) => lp - 0.5));
      for (const entropyCoef of [0, 0.05]) {
        const expected = await policy.gradients(BATCH, lossFn, { entropyCoef });
        for (const anticipated of [own, off]) {
          const actual = await policy.gradients(BATCH, anticipating(anticipated), { entropyCoef });
          expect(actual.value).toBeCloseTo(expected.value, 5);
          expect(worstRelativeGap(actual.gradients, expected.gradients).gap).toBeLessThan(1e-5);
        }
      }
      // Which runs it took, told by the update's metrics (each on a policy of its own: an update moves the weights).
      for (const [anticipated, corrected] of [
        [own, 0],
        [off, 1],
      ] as const) {
        const fresh = await tiny({ ...settings, onnx: { intraOpThreads: 1, trainingLanes: lanes } });
        const result = await fresh.update(BATCH, anticipating(anticipated));
        expect(result.metrics?.anticipationCorrected).toBe(corrected);
      }
    });
  }

  it('trainingThreads reaches the training sessions, intraOpThreads the rollout sessions', async () => {
    const real = (await import('onnxruntime-node')) as unknown as typeof Ort & { default?: typeof Ort };
    const ort = real.InferenceSession ? real : real.default!;
    const seen: number[] = [];
    const recording = {
      ...ort,
      InferenceSession: {
        create: (model: Uint8Array, options: Ort.InferenceSession.SessionOptions) => {
          seen.push(options.intraOpNumThreads!);
          return ort.InferenceSession.create(model, options);
        },
      },
    };
    const policy = await tiny(
      { rollouts: 'onnx', training: 'onnx', onnx: { intraOpThreads: 1, trainingThreads: 2 } },
      { loadOnnxRuntime: async () => recording },
    );
    await policy.gradients(BATCH, lossFn);
    // The training engine's forward and backward sessions at 2; the rollouts' at 1.
    expect(seen.filter((n) => n === 2)).toHaveLength(2);
    expect(seen.filter((n) => n === 1).length).toBeGreaterThan(0);
  });

  it('lanes are counted in whole numbers, in the settings and by the engine', async () => {
    await expect(tiny({ training: 'onnx', onnx: { intraOpThreads: 1, trainingLanes: 0 } })).rejects.toThrow(
      /trainingLanes/,
    );
    // The engine's own check comes before it reads the model.
    for (const lanes of [0, 1.5])
      await expect(
        createOnnxTrainingEngine({} as never, {} as never, { intraOpThreads: 1, lanes }),
      ).rejects.toThrow(/lanes/);
  });

  it('the worker lanes train on the weights a checkpoint load brings', async () => {
    const settings = { seed: 9, training: 'onnx' as const };
    const two = await tiny({ ...settings, onnx: { intraOpThreads: 1, trainingLanes: 2 } });
    // The lanes have seen (and hold) seed 9's weights; then another policy's weights are loaded.
    await two.gradients(BATCH, lossFn);
    const other = await tiny({ ...settings, seed: 3 });
    await other.update(BATCH, lossFn);
    const checkpoint = await other.save();
    await two.load(checkpoint);
    const one = await tiny({ ...settings, seed: 3 });
    await one.load(checkpoint);
    const expected = await one.gradients(BATCH, lossFn);
    const actual = await two.gradients(BATCH, lossFn);
    expect(worstRelativeGap(actual.gradients, expected.gradients).gap).toBeLessThan(1e-6);
  });

  it('a failed update leaves the lanes usable: the next one gives the same gradients as one lane', async () => {
    const settings = { seed: 9, training: 'onnx' as const };
    const one = await tiny(settings);
    const two = await tiny({ ...settings, onnx: { intraOpThreads: 1, trainingLanes: 2 } });
    const refused: LossFunction = () => {
      throw new Error('refused');
    };
    await expect(two.update(BATCH, refused)).rejects.toThrow(/refused/);
    const expected = await one.gradients(BATCH, lossFn);
    const actual = await two.gradients(BATCH, lossFn);
    expect(worstRelativeGap(actual.gradients, expected.gradients).gap).toBeLessThan(1e-6);
  });

  it('an update moves the weights as the tfjs one does and reports the same fields', async () => {
    const settings = { seed: 2, optimizer: { learningRate: 1e-2 } };
    const viaTfjs = await tiny(settings);
    const viaOnnx = await tiny({ ...settings, training: 'onnx', onnx: { intraOpThreads: 2 } });
    for (let step = 0; step < 3; step++) {
      const expected = await viaTfjs.update(BATCH, lossFn, { entropyCoef: 0.01 });
      const actual = await viaOnnx.update(BATCH, lossFn, { entropyCoef: 0.01 });
      expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
      expect(Object.keys(actual.metrics!).sort()).toEqual(Object.keys(expected.metrics!).sort());
      expect(actual.applied).toBe(true);
      expect(actual.gradNorm).toBeCloseTo(expected.gradNorm, 4);
      expect(actual.value).toBeCloseTo(expected.value, 4);
      expect(actual.metrics!.entropy).toBeCloseTo(expected.metrics!.entropy!, 4);
    }
    expect(viaOnnx.optimizerStep).toBe(3);
    // The same weights after three steps: the next scores agree closely.
    const [a, b] = [await viaOnnx.logProbs(BATCH), await viaTfjs.logProbs(BATCH)];
    a.forEach((row, i) => row.forEach((lp, t) => expect(Math.abs(lp - b[i]![t]!)).toBeLessThan(1e-4)));
  });

  it('nothing scored: no step, zero gradients', async () => {
    const policy = await tiny({ training: 'onnx' });
    const empty = { inputIds: [[1, 2, 3]], positions: [[]] };
    expect((await policy.update(empty, lossFn)).applied).toBe(false);
    const { gradients } = await policy.gradients(empty, lossFn);
    expect(Object.values(gradients).every((g) => g.every((v) => v === 0))).toBe(true);
  });
});
