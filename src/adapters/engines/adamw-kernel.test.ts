import { describe, expect, it } from 'vitest';
import {
  type AdamWElementConstants,
  adamwStep,
  adamwStepReference,
  adamwStepTfjsOrder,
  adamwStepTfjsOrderReference,
} from './adamw-kernel';

const constants: AdamWElementConstants = {
  clip: 0.7,
  beta1: 0.9,
  beta2: 0.999,
  decay: 1 - 1e-3 * 0.01,
  stepSize: 1e-3 / (1 - 0.9 ** 3),
  inverseBc2: 1 / Math.sqrt(1 - 0.999 ** 3),
  epsilon: 1e-8,
};

/** Deterministic values in [-1, 1). */
function values(length: number, seed: number): Float32Array {
  let s = seed;
  return Float32Array.from({ length }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return s / 1073741824 - 1;
  });
}

describe('adamwStep (WebAssembly SIMD)', () => {
  // Lengths below a vector, not a multiple of 4, one block (16384) and across blocks.
  it.each([1, 3, 4, 7, 16384, 16385, 40_003])(
    'equals the float32 reference to the bit (%i elements)',
    (n) => {
      const p = values(n, 1);
      const g = values(n, 2);
      const m = values(n, 3);
      const v = values(n, 4).map(Math.abs);
      const [p2, m2, v2] = [p.slice(), m.slice(), v.slice()];
      const gBefore = g.slice();
      adamwStep(p, g, m, v, constants);
      adamwStepReference(p2, g, m2, v2, constants);
      expect(p).toEqual(p2);
      expect(m).toEqual(m2);
      expect(v).toEqual(v2);
      expect(g).toEqual(gBefore);
      // It moved: not a no-op that leaves the reference's inputs equal by accident.
      expect(p.some((x, i) => x !== values(n, 1)[i])).toBe(true);
    },
  );

  it("is torch's AdamW update: the float64 formula within float32 rounding", () => {
    const n = 1000;
    const p = values(n, 5);
    const g = values(n, 6);
    const m = new Float32Array(n);
    const v = new Float32Array(n);
    const expected = [...p].map((pi, i) => {
      const gi = g[i]! * constants.clip;
      const mi = (1 - constants.beta1) * gi;
      const vi = (1 - constants.beta2) * gi * gi;
      return (
        pi * constants.decay -
        (constants.stepSize * mi) / (Math.sqrt(vi) * constants.inverseBc2 + constants.epsilon)
      );
    });
    adamwStep(p, g, m, v, constants);
    p.forEach((x, i) => expect(x).toBeCloseTo(expected[i]!, 6));
  });

  it('keeps each call to its own tensors (a shorter call after a longer one)', () => {
    const long = [
      values(20_000, 7),
      values(20_000, 8),
      new Float32Array(20_000),
      new Float32Array(20_000),
    ] as const;
    adamwStep(...long, constants);
    const p = values(5, 9);
    const expected = p.slice();
    const m = new Float32Array(5);
    const v = new Float32Array(5);
    adamwStepReference(expected, values(5, 10), m.slice(), v.slice(), constants);
    adamwStep(p, values(5, 10), m, v, constants);
    expect(p).toEqual(expected);
  });
});

describe('adamwStepTfjsOrder (WebAssembly SIMD, the order of tfjs operations)', () => {
  const tfjs = {
    clip: 0.7,
    beta1: 0.9,
    beta2: 0.999,
    decay: 1 - 1e-3 * 0.01,
    stepSize: 1e-3 / (1 - 0.9 ** 3),
    sqrtBc2: Math.sqrt(1 - 0.999 ** 3),
    epsilon: 1e-8,
  };
  it.each([1, 5, 16384, 40_003])('equals its float32 reference to the bit (%i elements)', (n) => {
    const p = values(n, 11);
    const g = values(n, 12);
    const m = values(n, 13);
    const v = values(n, 14).map(Math.abs);
    const [p2, m2, v2] = [p.slice(), m.slice(), v.slice()];
    adamwStepTfjsOrder(p, g, m, v, tfjs);
    adamwStepTfjsOrderReference(p2, g, m2, v2, tfjs);
    expect(p).toEqual(p2);
    expect(m).toEqual(m2);
    expect(v).toEqual(v2);
    expect(p.some((x, i) => x !== values(n, 11)[i])).toBe(true);
  });

  it('differs from the torch order in the last bits somewhere (they are two orders, not one)', () => {
    const n = 4096;
    const [p, g, m, v] = [values(n, 21), values(n, 22), values(n, 23), values(n, 24).map(Math.abs)];
    const torch = [p.slice(), m.slice(), v.slice()] as const;
    adamwStepTfjsOrder(p, g, m, v, tfjs);
    adamwStep(torch[0], g, torch[1], torch[2], { ...tfjs, inverseBc2: 1 / tfjs.sqrtBc2 });
    expect(p.some((x, i) => x !== torch[0][i])).toBe(true);
    p.forEach((x, i) => expect(x).toBeCloseTo(torch[0][i]!, 5));
  });
});
