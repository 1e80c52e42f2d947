import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { BackendUnavailableError } from '../../core/errors';
import { createRandom } from '../../core/random';
import { createLossFunction } from '../../core/rl/update-batch';
import type { LogProbBatch, LossFunction } from '../../ports/policy-backend';
import { selectTfjsBackend } from './backends';
import { createTfjsPolicy, type TfjsPolicy } from './policy';
import { incrementalLogProbError, rollTwoTurns } from '../../testing/policy-contract';
import { useTinyPolicies } from './__fixtures__/tiny-policy';
import { gpt2TensorName } from './hf/gpt2';
import { decodeSafetensors, encodeSafetensors, float32Of } from '../../provider-utils/safetensors';

const tiny = useTinyPolicies();

describe('backend selection', () => {
  it('picks the highest-priority backend that initialises and reports what it passed over', async () => {
    const selected = await selectTfjsBackend('auto');
    // tfjs-node(-gpu) cannot be installed on this machine; wasm is the default here.
    expect(selected.name).toBe('wasm');
    expect(selected.skipped.map((s) => s.name)).toEqual(['tensorflow-gpu', 'tensorflow']);
    expect(selected.skipped[1]!.reason).toMatch(/npm install @tensorflow\/tfjs-node/);
  });

  it('prefers tfjs-node over wasm when it loads', async () => {
    const cpuFactory = tf.findBackendFactory('cpu')!;
    const loaded: string[] = [];
    const loader = async (name: string) => {
      loaded.push(name);
      if (name === '@tensorflow/tfjs-node') tf.registerBackend('tensorflow', cpuFactory);
      else if (name !== '@tensorflow/tfjs-backend-wasm') throw new Error(`Cannot find package '${name}'`);
    };
    try {
      const selected = await selectTfjsBackend('auto', loader);
      expect(selected.name).toBe('tensorflow');
      expect(loaded).toEqual(['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node']);
    } finally {
      await tf.setBackend('wasm');
      tf.removeBackend('tensorflow');
    }
  });

  it('a named backend that is missing is a clear error, and an unknown name lists the known ones', async () => {
    const error = await selectTfjsBackend('tensorflow').catch((e: unknown) => e);
    expect(BackendUnavailableError.isInstance(error)).toBe(true);
    expect((error as BackendUnavailableError).backend).toBe('tensorflow');
    expect((error as Error).message).toMatch(/@tensorflow\/tfjs-node/);
    await expect(selectTfjsBackend('webgpu' as never)).rejects.toThrow(
      /unknown backend; use 'auto' or one of tensorflow-gpu, tensorflow, wasm, cpu/,
    );
    await expect(selectTfjsBackend('tensorflow', async () => undefined)).rejects.toThrow(
      /registered no 'tensorflow' backend/,
    );
    await expect(createTfjsPolicy({ backend: 'tensorflow-gpu' })).rejects.toThrow(/tfjs-node-gpu/);
  });
});

describe('numeric contract (every backend)', () => {
  const reference: { logProbs?: number[][]; batch?: LogProbBatch } = {};
  for (const backend of ['wasm', 'cpu'] as const) {
    it(`${backend}: incremental log-probs equal a full forward within 1e-5`, async () => {
      const policy = await tiny({ backend });
      expect(policy.backend.name).toBe(backend);
      const saved = decodeSafetensors((await policy.save()).blobs['model.safetensors']!, {
        argument: 'test',
      });
      const savedScalars = [...saved.tensors.values()].reduce((n, t) => n + float32Of(t)!.length, 0);
      expect(policy.describe()).toEqual({
        parameterCount: savedScalars,
        trainableParameterCount: savedScalars,
        backend,
        addedTags: [],
      });
      for (const options of [
        { temperature: 1, topP: 1 },
        { temperature: 0.7, topP: 0.9 },
      ]) {
        const { maxError, positionsHold, rollout } = await incrementalLogProbError(policy, options);
        expect(positionsHold).toBe(true);
        expect(maxError).toBeLessThan(1e-5);
        const { sequences, steps } = rollout;
        if (options.temperature === 1) {
          // The same seed gives the same weights on every backend: their log-probs agree.
          const batch = reference.batch ?? {
            inputIds: sequences,
            positions: steps.map((row) => row.map((s) => s.position)),
          };
          const lp = await policy.logProbs(batch);
          if (!reference.logProbs) Object.assign(reference, { batch, logProbs: lp });
          else
            lp.forEach((row, i) =>
              row.forEach((v, k) => expect(v).toBeCloseTo(reference.logProbs![i]![k]!, 4)),
            );
        }
      }
    });
  }
});

describe('TfjsPolicy', () => {
  const finiteDifferences = async (
    makeLoss: (
      batch: LogProbBatch,
      policy: TfjsPolicy,
      random: ReturnType<typeof createRandom>,
    ) => Promise<LossFunction>,
  ) => {
    const policy = await tiny({ model: { layers: 1, width: 8, heads: 2, contextLength: 16 }, seed: 9 });
    const random = createRandom(4);
    const batch: LogProbBatch = {
      inputIds: [
        [3, 70, 101, 12, 260, 99],
        [5, 8, 13, 21, 34],
      ],
      positions: [
        [2, 3, 5],
        [1, 4],
      ],
    };
    const lossFn = await makeLoss(batch, policy, random);
    const objective = async () => lossFn(await policy.logProbs(batch)).value;
    const { gradients } = await policy.gradients(batch, lossFn);
    const base = await policy.save();
    const names = Object.keys(gradients);
    const flat = (name: string) => gradients[name]!;
    const shift = async (direction: Record<string, Float32Array>, epsilon: number) => {
      const { tensors } = decodeSafetensors(base.blobs['model.safetensors']!, { argument: 'test' });
      const weights = [...tensors].map(([tensor, { shape }]) => {
        const values = float32Of(tensors.get(tensor)!)!;
        const name = names.find((n) => gpt2TensorName(n) === tensor);
        const d = name ? direction[name]! : new Float32Array(0);
        for (let i = 0; i < d.length; i++) values[i]! += epsilon * d[i]!;
        return { name: tensor, shape, values };
      });
      await policy.load({
        ...base,
        blobs: { ...base.blobs, 'model.safetensors': encodeSafetensors(weights, { format: 'pt' }) },
      });
      return objective();
    };
    const directional = async (direction: Record<string, Float32Array>) => {
      // Small: layer norms over tiny activations curve sharply (FD converges to the analytic value as epsilon -> 0).
      const epsilon = 1e-3;
      const fd = ((await shift(direction, epsilon)) - (await shift(direction, -epsilon))) / (2 * epsilon);
      const analytic = names.reduce(
        (s, name) => s + flat(name).reduce((t, v, i) => t + v * direction[name]![i]!, 0),
        0,
      );
      return { fd, analytic };
    };
    // Along the gradient itself, along a random direction, and along single coordinates.
    const norm = Math.sqrt(names.reduce((s, n) => s + flat(n).reduce((t, v) => t + v * v, 0), 0));
    const along = Object.fromEntries(names.map((n) => [n, flat(n).map((v) => v / norm)]));
    const randomDirection = Object.fromEntries(
      names.map((n) => [
        n,
        flat(n).map(() => random.nextNormal() / Math.sqrt(flat(n).length * names.length)),
      ]),
    );
    const byGradient = await directional(along);
    expect(byGradient.fd).toBeCloseTo(norm, 2);
    expect(Math.abs(byGradient.fd - byGradient.analytic) / byGradient.analytic).toBeLessThan(1e-2);
    const byRandom = await directional(randomDirection);
    expect(Math.abs(byRandom.fd - byRandom.analytic)).toBeLessThan(1e-2 * norm);
    for (const name of ['blocks.0.attention.qkv', 'tokenEmbedding', 'finalNorm.gain', 'positionEmbedding']) {
      const values = flat(name);
      const index = values.reduce((best, v, i) => (Math.abs(v) > Math.abs(values[best]!) ? i : best), 0);
      const unit = Object.fromEntries(names.map((n) => [n, new Float32Array(flat(n).length)]));
      unit[name]![index] = 1;
      const { fd, analytic } = await directional(unit);
      expect(Math.abs(fd - analytic)).toBeLessThan(2e-2 * Math.abs(analytic) + 2e-3);
    }
  };

  it('matches finite differences of sum g*logp (the backend half)', async () => {
    await finiteDifferences(async (batch, _policy, random) => {
      const g = batch.positions.map((row) => row.map(() => random.nextNormal()));
      return (lp) => ({
        value: lp.reduce((s, row, i) => s + row.reduce((t, v, k) => t + v * g[i]![k]!, 0), 0),
        gradNewLogProbs: g,
      });
    });
  });

  it('matches finite differences of the core GSPO + k3 KL loss end to end', async () => {
    await finiteDifferences(async (batch, policy, random) => {
      // Old log-probs near the current ones, so that the ratios sit inside the clip range (no kinks).
      const current = await policy.logProbs(batch);
      const oldLogProbs = current.map((row) => row.map((v) => v + 0.02 * random.nextNormal()));
      return createLossFunction(
        { oldLogProbs, advantages: [1.2, -0.7] },
        {
          kind: 'gspo',
          clipLow: 0.2,
          clipHigh: 0.28,
          aggregation: 'seq-mean-token-mean',
          klCoef: 0.1,
          klEstimator: 'k3',
        },
      );
    });
  });

  it('an update moves log-probs with the sign of the advantage (GSPO and PPO-clip)', async () => {
    const policy = await tiny({ optimizer: { learningRate: 1e-3, weightDecay: 0 } });
    const { sequences, steps } = await rollTwoTurns(policy, { temperature: 1, topP: 1 });
    const positions = steps.map((row) => row.map((s) => s.position));
    const advantages = [1, -1, 0.5];
    for (const kind of ['gspo', 'ppo_clip'] as const) {
      const before = await policy.logProbs({ inputIds: sequences, positions });
      const lossFn = createLossFunction(
        { oldLogProbs: before, advantages },
        {
          kind,
          clipLow: 0.2,
          clipHigh: 0.28,
          aggregation: 'seq-mean-token-mean',
          klCoef: 0,
          klEstimator: 'k3',
        },
      );
      const result = await policy.update({ inputIds: sequences, positions }, lossFn);
      expect(result.applied).toBe(true);
      const after = await policy.logProbs({ inputIds: sequences, positions });
      const change = after.map((row, i) => row.reduce((s, v, k) => s + v - before[i]![k]!, 0));
      expect(change[0]).toBeGreaterThan(0);
      expect(change[1]).toBeLessThan(0);
      expect(change[2]).toBeGreaterThan(0);
    }
  });

  it('skips a step whose gradient norm is not finite, and says so', async () => {
    const policy = await tiny();
    const batch = { inputIds: [[1, 2, 3, 4]], positions: [[2, 3]] };
    const before = await policy.logProbs(batch);
    const result = await policy.update(batch, () => ({ value: NaN, gradNewLogProbs: [[NaN, 1]] }));
    expect(result).toMatchObject({ applied: false });
    expect(Number.isFinite(result.gradNorm)).toBe(false);
    expect(result.skippedReason).toMatch(/non-finite gradient norm/);
    expect(await policy.logProbs(batch)).toEqual(before);
    expect(policy.optimizerStep).toBe(0);
  });

  it('clips the gradient norm and reports the norm before clipping', async () => {
    const policy = await tiny({ optimizer: { maxGradNorm: 1e-3 } });
    const batch = { inputIds: [[1, 2, 3, 4]], positions: [[2, 3]] };
    const result = await policy.update(batch, (lp) => ({
      value: 0,
      gradNewLogProbs: lp.map((row) => row.map(() => -100)),
    }));
    expect(result.applied).toBe(true);
    expect(result.gradNorm).toBeGreaterThan(1e-3);
  });

  it('keeps the number of live tensors flat over 20 steps of rollouts and updates', async () => {
    const policy = await tiny();
    const run = async () => {
      const { sequences, steps } = await rollTwoTurns(policy, { temperature: 1, topP: 0.95 });
      const positions = steps.map((row) => row.map((s) => s.position));
      const old = steps.map((row) => row.map((s) => s.logProb));
      const lossFn = createLossFunction(
        { oldLogProbs: old, advantages: [0.5, -1, 0.5] },
        {
          kind: 'gspo',
          clipLow: 3e-4,
          clipHigh: 4e-4,
          aggregation: 'seq-mean-token-mean',
          klCoef: 0.01,
          klEstimator: 'k3',
        },
      );
      await policy.update({ inputIds: sequences, positions }, lossFn, { entropyCoef: 0.01 });
      await policy.logProbs({ inputIds: sequences, positions });
    };
    await run();
    const before = tf.memory().numTensors;
    const counts: number[] = [];
    for (let i = 0; i < 20; i++) {
      await run();
      counts.push(tf.memory().numTensors);
    }
    expect(counts.every((c) => c === before)).toBe(true);
  });
});
