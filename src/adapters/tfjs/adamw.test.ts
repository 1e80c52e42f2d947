import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AdamW, type AdamWSettings, type NamedParameter } from './adamw';

// The fused step on the wasm backend against tfjs's own operations: the same bits, step after
// step, with clipping, weight decay on some tensors and a warm-up; and tensors that share the old
// data (a clone) keep it.

const settings: AdamWSettings = {
  learningRate: 3e-3,
  beta1: 0.9,
  beta2: 0.95,
  epsilon: 1e-8,
  weightDecay: 0.1,
  maxGradNorm: 1,
  warmupSteps: 2,
};

/** Deterministic values in [-scale, scale). */
function values(length: number, seed: number, scale = 1): Float32Array {
  let s = seed;
  return Float32Array.from({ length }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 1073741824 - 1) * scale;
  });
}

const shapes: Array<[string, number[], boolean]> = [
  ['w', [37, 19], true],
  ['b', [19], false],
  ['emb', [5, 3, 7], false],
  ['big', [256, 300], true],
];
const parametersOf = (): NamedParameter[] =>
  shapes.map(([name, shape, decay], k) => ({
    name,
    variable: tf.variable(
      tf.tensor(
        values(
          shape.reduce((a, b) => a * b),
          k + 1,
        ),
        shape,
      ),
    ),
    decay,
  }));

let before: string | undefined;
beforeAll(async () => {
  before = tf.getBackend();
  await tf.setBackend('wasm');
});
afterAll(async () => {
  if (before) await tf.setBackend(before);
});

describe('tfjs AdamW on the wasm backend', () => {
  it('gives the bits of the tfjs operations, step after step', () => {
    const fusedParameters = parametersOf();
    const opParameters = parametersOf();
    const fused = new AdamW(fusedParameters, settings);
    const ops = new AdamW(opParameters, settings, { fused: false });
    expect([fused.fusedOnBackend(), ops.fusedOnBackend()]).toEqual([true, false]);
    const clone = tf.clone(fusedParameters[0]!.variable);
    const cloneBefore = clone.dataSync().slice();
    const tensorsBefore = tf.memory().numTensors;
    for (let step = 0; step < 7; step++) {
      // Large gradients on odd steps, so the norm clips there and not on even ones; a NaN on step 4
      // (the step is skipped by both).
      const grads = shapes.map(([, shape], k) => {
        const g = values(
          shape.reduce((a, b) => a * b),
          100 * step + k,
          step % 2 === 1 ? 5 : 0.01,
        );
        if (step === 4 && k === 1) g[3] = Number.NaN;
        return tf.tensor(g, shape);
      });
      const a = fused.apply(grads);
      const b = ops.apply(grads);
      expect(a).toEqual(b);
      expect(a.applied).toBe(step !== 4);
      fusedParameters.forEach((p, k) => {
        expect(p.variable.dataSync(), `${p.name} at step ${step}`).toEqual(
          opParameters[k]!.variable.dataSync(),
        );
        expect(fused.firstMoments[k]!.dataSync()).toEqual(ops.firstMoments[k]!.dataSync());
        expect(fused.secondMoments[k]!.dataSync()).toEqual(ops.secondMoments[k]!.dataSync());
      });
      for (const g of grads) g.dispose();
    }
    // It moved the weights, left the clone's data alone, and holds no more tensors than before.
    expect(fusedParameters[0]!.variable.dataSync()).not.toEqual(cloneBefore);
    expect(clone.dataSync()).toEqual(cloneBefore);
    expect(tf.memory().numTensors).toBe(tensorsBefore);
    clone.dispose();
    for (const p of [...fusedParameters, ...opParameters]) p.variable.dispose();
    fused.dispose();
    ops.dispose();
  });
});
