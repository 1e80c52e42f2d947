import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRandom, type Random } from '../core/random';
import { sampleToken } from './sampling';

/** Log softmax in float64, stored as float32 like the decoder's; `null` logits get probability 0. */
function logSoftmax(logits: ReadonlyArray<number | null>): Float32Array {
  const finite = logits.filter((x): x is number => x !== null);
  const max = Math.max(...finite);
  const logSum = max + Math.log(finite.reduce((s, x) => s + Math.exp(x - max), 0));
  return Float32Array.from(logits, (x) => (x === null ? -Infinity : x - logSum));
}

/**
 * Log-probs over 1..40 tokens, about one in five impossible. With `lastPossible`, the last id always
 * keeps some mass: float rounding can leave a categorical draw above the summed probabilities, and
 * the sampler then returns the last id (pinned by its own test below).
 */
const logProbsArbitrary = (options: { lastPossible?: boolean } = {}) =>
  fc
    .array(fc.option(fc.double({ min: -12, max: 12, noNaN: true }), { freq: 4 }), {
      minLength: 1,
      maxLength: 40,
    })
    .map((logits) => {
      const last = logits.length - 1;
      if (logits[last] === null && (options.lastPossible || logits.every((x) => x === null)))
        logits[last] = 0;
      return logSoftmax(logits);
    });

const temperatureArbitrary = fc.double({ min: 0.05, max: 4, noNaN: true });
const topPArbitrary = fc.oneof(
  fc.constant(1),
  fc.double({ min: 0.01, max: 1, noNaN: true, maxExcluded: true }),
);

/** A sampled token's inputs: log-probs whose last id keeps mass, a temperature, a top-p and a seed. */
const sampledCase = [
  logProbsArbitrary({ lastPossible: true }),
  temperatureArbitrary,
  topPArbitrary,
  fc.integer(),
] as const;

/** A Random that counts its draws and refuses every other kind of call. */
function counting(seed: number) {
  const inner = createRandom(seed);
  let draws = 0;
  const random: Random = {
    nextFloat: () => {
      draws++;
      return inner.nextFloat();
    },
    nextInt: () => {
      throw new Error('the sampler must draw with nextFloat only');
    },
    nextNormal: () => {
      throw new Error('the sampler must draw with nextFloat only');
    },
    state: () => inner.state(),
    restore: (state) => inner.restore(state),
  };
  return { random, draws: () => draws };
}

/** A Random whose one float is `u`; a second draw fails the test. */
function oneDraw(u: number): Random {
  let drawn = false;
  return {
    ...createRandom(0),
    nextFloat: () => {
      if (drawn) throw new Error('the sampler drew twice');
      drawn = true;
      return u;
    },
  };
}

/** The floats nextFloat can return (k / 2^32), edges included: fast-check favours extremes. */
const drawArbitrary = fc.integer({ min: 0, max: 2 ** 32 - 1 }).map((k) => k / 2 ** 32);

/** Token ids by decreasing probability, ties by lower id: the order the nucleus is taken in. */
function byProbability(logProbs: Float32Array): number[] {
  return Array.from(logProbs.keys()).sort((a, b) => logProbs[b]! - logProbs[a]! || a - b);
}

describe('sampleToken', () => {
  it('at temperature 0 returns the first argmax and draws nothing', () => {
    fc.assert(
      fc.property(logProbsArbitrary(), topPArbitrary, fc.integer(), (logProbs, topP, seed) => {
        const { random, draws } = counting(seed);
        const token = sampleToken(logProbs, { temperature: 0, topP }, random);
        const best = Math.max(...logProbs);
        expect(logProbs[token]).toBe(best);
        expect(logProbs.indexOf(best)).toBe(token);
        expect(draws()).toBe(0);
      }),
    );
  });

  it('draws exactly one float per sampled token and returns a token with positive probability', () => {
    fc.assert(
      fc.property(...sampledCase, (logProbs, temperature, topP, seed) => {
        const { random, draws } = counting(seed);
        const token = sampleToken(logProbs, { temperature, topP }, random);
        expect(Number.isInteger(token) && token >= 0 && token < logProbs.length).toBe(true);
        expect(Math.exp(logProbs[token]!)).toBeGreaterThan(0);
        expect(draws()).toBe(1);
      }),
    );
  });

  it('with top-p, never samples a token when the tokens more likely than it already reach topP', () => {
    fc.assert(
      fc.property(
        logProbsArbitrary(),
        temperatureArbitrary,
        fc.double({ min: 0.01, max: 1, noNaN: true, maxExcluded: true }),
        drawArbitrary,
        (logProbs, temperature, topP, u) => {
          const token = sampleToken(logProbs, { temperature, topP }, oneDraw(u));
          // Summed in the sampler's order, so that the float sums are the same numbers.
          let massAbove = 0;
          for (const id of byProbability(logProbs)) {
            if (!(logProbs[id]! > logProbs[token]!)) break;
            massAbove += Math.exp(logProbs[id]!);
          }
          expect(massAbove).toBeLessThan(topP);
        },
      ),
      // A token just past the nucleus is only reachable by a draw near its end: many runs find one.
      { numRuns: 1000 },
    );
  });

  it('at topP 1, returns the token whose interval of the cumulative distribution holds the draw', () => {
    fc.assert(
      fc.property(
        logProbsArbitrary({ lastPossible: true }),
        temperatureArbitrary,
        drawArbitrary,
        (logProbs, temperature, u) => {
          const token = sampleToken(logProbs, { temperature, topP: 1 }, oneDraw(u));
          let below = 0;
          for (let id = 0; id < token; id++) below += Math.exp(logProbs[id]!);
          expect(below).toBeLessThanOrEqual(u);
          if (token < logProbs.length - 1) expect(u).toBeLessThan(below + Math.exp(logProbs[token]!));
        },
      ),
    );
  });

  it('the same seed gives the same token and leaves the stream in the same state', () => {
    fc.assert(
      fc.property(...sampledCase, (logProbs, temperature, topP, seed) => {
        const a = createRandom(seed);
        const b = createRandom(seed);
        expect(sampleToken(logProbs, { temperature, topP }, a)).toBe(
          sampleToken(logProbs, { temperature, topP }, b),
        );
        expect(a.state()).toEqual(b.state());
      }),
    );
  });

  it('draws each token about as often as its probability (renormalised inside the nucleus)', () => {
    const draws = 20_000;
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: -3, max: 3, noNaN: true }), { minLength: 2, maxLength: 8 }),
        fc.oneof(fc.constant(1), fc.double({ min: 0.3, max: 0.95, noNaN: true })),
        fc.integer(),
        (logits, topP, seed) => {
          const logProbs = logSoftmax(logits);
          const target = new Float64Array(logProbs.length);
          let mass = 0;
          for (const id of byProbability(logProbs)) {
            if (mass >= topP) break;
            target[id] = Math.exp(logProbs[id]!);
            mass += target[id]!;
          }
          const counts = new Float64Array(logProbs.length);
          const random = createRandom(seed);
          for (let i = 0; i < draws; i++) counts[sampleToken(logProbs, { temperature: 1, topP }, random)]!++;
          target.forEach((p, id) => {
            const q = p / mass;
            // Six standard errors: with both generators seeded the outcome is fixed, and the bound is far from it.
            expect(Math.abs(counts[id]! / draws - q)).toBeLessThanOrEqual(
              6 * Math.sqrt((q * (1 - q)) / draws) + 1e-3,
            );
          });
        },
      ),
      { seed: 20240611, numRuns: 25 },
    );
  });

  it('falls back to the last id when rounding leaves a categorical draw above the summed probabilities', () => {
    const logProbs = Float32Array.from([Math.log(0.5), Math.log(0.4999)]);
    const stuck: Random = { ...createRandom(0), nextFloat: () => 0.99995 };
    expect(sampleToken(logProbs, { temperature: 1, topP: 1 }, stuck)).toBe(1);
  });
});
