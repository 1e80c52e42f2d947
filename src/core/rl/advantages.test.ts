import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors';
import { groupAdvantages } from './advantages';
import { batchAdvantages } from './group-rule';
import vectors from './__fixtures__/grpo_advantages.json';
import { relativeError } from '../../testing/closeness';

interface AdvantageCase {
  rewards: number[];
  std: 'population' | 'unbiased';
  eps: number;
  normalize: boolean;
  advantages: number[];
}

describe('groupAdvantages against the PyTorch reference', () => {
  const cases = vectors.cases as AdvantageCase[];
  it('has all the reference cases', () => {
    expect(cases.length).toBe(120);
  });
  it.each(cases.map((c, index) => ({ ...c, index })))(
    'case $index ($std, n=$rewards.length, normalize=$normalize)',
    (c) => {
      const actual = groupAdvantages(c.rewards, { std: c.std, eps: c.eps, normalize: c.normalize });
      expect(actual).toHaveLength(c.advantages.length);
      actual.forEach((a, i) => {
        const expected = c.advantages[i]!;
        // Near-zero references (a tied group) are compared absolutely.
        if (Math.abs(expected) < 1e-12) expect(Math.abs(a)).toBeLessThan(1e-9);
        else expect(relativeError(a, expected)).toBeLessThan(1e-9);
      });
    },
  );
});

describe('groupAdvantages', () => {
  it('gives 0 to a group of one', () => {
    expect(groupAdvantages([3.5])).toEqual([0]);
  });

  it('leaves missing rewards (null or NaN) out of the statistics and gives them 0', () => {
    const withMissing = groupAdvantages([1, null, 0, Number.NaN, 0.5]);
    const without = groupAdvantages([1, 0, 0.5]);
    expect(withMissing[0]).toBeCloseTo(without[0]!, 12);
    expect(withMissing[2]).toBeCloseTo(without[1]!, 12);
    expect(withMissing[4]).toBeCloseTo(without[2]!, 12);
    expect(withMissing[1]).toBe(0);
    expect(withMissing[3]).toBe(0);
  });

  it('gives zeros when fewer than two rewards are valid', () => {
    expect(groupAdvantages([null, 1, null])).toEqual([0, 0, 0]);
  });

  it('gives a tied group zeros (no division by zero)', () => {
    expect(groupAdvantages([0.7, 0.7, 0.7])).toEqual([0, 0, 0]);
  });

  it('adds eps to the std where it acts: a near-tied group is damped, not blown up to +-1', () => {
    // Population std of [0, 1e-9] is 5e-10; with the default eps 1e-8 the advantages are +-5e-10 / (5e-10 + 1e-8).
    const damped = 5e-10 / (5e-10 + 1e-8);
    const [low, high] = groupAdvantages([0, 1e-9]);
    expect(relativeError(low!, -damped)).toBeLessThan(1e-12);
    expect(relativeError(high!, damped)).toBeLessThan(1e-12);
    expect(groupAdvantages([0, 1e-9], { eps: 0 })).toEqual([-1, 1]);
    // Unbiased: std 1e-9 / sqrt(2), default eps 1e-6.
    const unbiased = 5e-10 / (1e-9 / Math.SQRT2 + 1e-6);
    expect(relativeError(groupAdvantages([0, 1e-9], { std: 'unbiased' })[1]!, unbiased)).toBeLessThan(1e-12);
  });

  it('names the bad reward', () => {
    expect(() => groupAdvantages([1, Number.POSITIVE_INFINITY])).toThrowError(InvalidArgumentError);
    try {
      groupAdvantages([1, Number.POSITIVE_INFINITY]);
    } catch (error) {
      expect(InvalidArgumentError.isInstance(error) && error.argument).toBe('rewards[1]');
    }
    expect(() => groupAdvantages([1, 2], { std: 'sample' as never })).toThrow(/std/);
  });

  it('property: advantages of the valid members sum to zero', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.double({ min: -10, max: 10, noNaN: true }), { nil: null, freq: 4 }), {
          minLength: 1,
          maxLength: 32,
        }),
        fc.constantFrom('population' as const, 'unbiased' as const),
        fc.boolean(),
        (rewards, std, normalize) => {
          const advantages = groupAdvantages(rewards, { std, normalize });
          const sum = advantages.reduce((s, a) => s + a, 0);
          expect(Math.abs(sum)).toBeLessThan(1e-6 * Math.max(1, rewards.length));
          rewards.forEach((r, i) => {
            if (r === null) expect(advantages[i]).toBe(0);
          });
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe('batchAdvantages', () => {
  it('normalises each group on its own, whatever the order of samples', () => {
    const rewards = [1, 5, 0, 5, 1, 10];
    const groups = ['a', 'b', 'a', 'b', 'a', 'b'];
    const result = batchAdvantages(rewards, groups);
    const a = groupAdvantages([1, 0, 1]);
    const b = groupAdvantages([5, 5, 10]);
    expect(result.advantages).toEqual([a[0], b[0], a[1], b[1], a[2], b[2]]);
    expect(result.advantages.every((x) => x !== null)).toBe(true);
    expect(result.groupCount).toBe(2);
  });

  it('drops zero-variance groups when asked, and excludes missing and underfilled samples', () => {
    const rewards = [1, 1, 0, 1, null, 2];
    const groups = ['flat', 'flat', 'mixed', 'mixed', 'lonely', 'lonely'];
    const result = batchAdvantages(rewards, groups, { dropZeroVarianceGroups: true });
    expect(result.advantages.map((x) => x !== null)).toEqual([false, false, true, true, false, false]);
    expect(result.droppedZeroVarianceGroups).toBe(1);
    expect(result.underfilledGroups).toBe(1);
    expect(result.missingRewards).toBe(1);
    expect(result.advantages[0]).toBe(null);
    expect(result.advantages[5]).toBe(null);
  });

  it('rejects mismatched lengths naming the argument', () => {
    expect(() => batchAdvantages([1, 2], ['g'])).toThrow(/groupIds/);
  });
});
