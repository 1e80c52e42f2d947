import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TrajectoryQualityController } from './controller';
import { isVqaCorrect } from './vqa-accuracy';
import type { IcdTrajectory } from './types';

const SCORES = [0, 0.3, 0.6, 0.9, 1];
const trajectory = fc
  .record({
    pointer: fc.uniqueArray(fc.integer({ min: 0, max: 63 }), { minLength: 2, maxLength: 2 }),
    vqa_acc_score: fc.constantFrom(...SCORES),
    gen_method: fc.constantFrom('beam' as const, 'sample' as const, 'random' as const),
  })
  .map((t) => ({ ...t, vqa_correct: isVqaCorrect(t.vqa_acc_score) }) as IcdTrajectory);

const t = (score: number, pointer = [0, 1]): IcdTrajectory => ({
  pointer,
  vqa_correct: isVqaCorrect(score),
  vqa_acc_score: score,
  gen_method: 'sample',
});
const isPositive = (x: IcdTrajectory) => x.vqa_acc_score >= 1;
const isPartial = (x: IcdTrajectory) => x.vqa_acc_score > 0 && x.vqa_acc_score < 1;
const isZero = (x: IcdTrajectory) => x.vqa_acc_score <= 0;

const key = (x: IcdTrajectory) => x.pointer.join(',');
const distinctKeys = (list: readonly IcdTrajectory[]) => new Set(list.map(key));
/** One trajectory a pointer, the best scored (what the controller counts as distinct). */
const bestPerPointer = (list: readonly IcdTrajectory[]) => {
  const best = new Map<string, IcdTrajectory>();
  for (const x of list) if ((best.get(key(x))?.vqa_acc_score ?? -1) < x.vqa_acc_score) best.set(key(x), x);
  return [...best.values()];
};

describe('the final trajectories: property 6 and the quotas (issue 41)', () => {
  it('a query with few distinct trajectories is filled to 12 by repeating its acc-0 ones, the quotas held', () => {
    const controller = new TrajectoryQualityController();
    const result = controller.selectFinal([t(1), t(1, [2, 3]), t(0.6, [6, 7]), t(0, [4, 5])]);
    expect(result.trajectories).toHaveLength(12);
    expect(result.trajectories.filter(isPositive)).toHaveLength(2);
    expect(result.trajectories.filter(isPartial)).toHaveLength(1);
    expect(result.trajectories.filter(isZero)).toHaveLength(9);
    expect(result).toMatchObject({ distinct: 4, repeated: 8 });
  });

  it('a query without acc-0 trajectories goes past the quotas before repeating anything, then repeats all in order', () => {
    const controller = new TrajectoryQualityController();
    const all = [
      t(1, [0, 1]),
      t(1, [1, 2]),
      t(1, [2, 3]),
      t(1, [3, 4]),
      t(1, [4, 5]),
      t(0.6, [5, 6]),
      t(0.3, [6, 7]),
      t(0.9, [7, 8]),
    ];
    const result = controller.selectFinal(all);
    expect(result.trajectories).toHaveLength(12);
    expect(result).toMatchObject({ distinct: 8, repeated: 4 });
    expect(distinctKeys(result.trajectories).size).toBe(8);
    // One trajectory in: twelve copies of it, counted.
    expect(controller.selectFinal([t(1)])).toEqual({
      trajectories: Array(12).fill(t(1)),
      distinct: 1,
      repeated: 11,
    });
  });

  it('13 positives give 12 distinct ones and 17 distinct trajectories give no repeat (the held-out cases)', () => {
    const controller = new TrajectoryQualityController();
    const positives = Array.from({ length: 13 }, (_, i) => t(1, [i, i + 1]));
    const thirteen = controller.selectFinal(positives);
    expect(thirteen).toMatchObject({ distinct: 12, repeated: 0 });
    expect(distinctKeys(thirteen.trajectories).size).toBe(12);
    const seventeen = [
      ...Array.from({ length: 10 }, (_, i) => t(1, [i, i + 20])),
      t(0.6, [40, 41]),
      t(0.3, [41, 42]),
      t(0.9, [42, 43]),
      t(0, [50, 51]),
      t(0, [51, 52]),
      t(0.6, [52, 53]),
      t(1, [53, 54]),
    ];
    const final = controller.selectFinal(seventeen);
    expect(final).toMatchObject({ distinct: 12, repeated: 0 });
    expect(distinctKeys(final.trajectories).size).toBe(12);
    // Both acc-0 ones are in: the quotas are passed only because nothing else remained.
    expect(final.trajectories.filter(isZero)).toHaveLength(2);
  });

  it('a pointer given twice is one trajectory: its second copy is a repeat', () => {
    const result = new TrajectoryQualityController({ targetTrajectoryCount: 3 }).selectFinal([
      t(0, [1, 2]),
      t(0, [1, 2]),
      t(0, [3, 4]),
    ]);
    expect(result).toMatchObject({ distinct: 2, repeated: 1 });
  });

  it('for any trajectories and any M and quotas: exactly M; distinct ones fill it before any repeat; the quotas hold while other trajectories remain; repeats only when fewer distinct exist, and counted', () => {
    fc.assert(
      fc.property(
        fc.array(trajectory, { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 3 }),
        (all, target, positiveQuota, partialQuota) => {
          const positiveMin = Math.min(2, positiveQuota);
          const partialMin = Math.min(1, partialQuota);
          const controller = new TrajectoryQualityController({
            targetTrajectoryCount: target,
            positiveQuota,
            partialQuota,
            positiveMin,
            partialMin,
          });
          const result = controller.selectFinal(all);
          const final = result.trajectories;
          for (const x of final) expect(all).toContain(x);
          // Property 6: exactly M.
          expect(final).toHaveLength(target);
          // Distinct before repeats, and repeats counted.
          const available = distinctKeys(all).size;
          const used = distinctKeys(final).size;
          expect(used).toBe(Math.min(target, available));
          expect(result.distinct).toBe(used);
          expect(result.repeated).toBe(target - used);
          // The quotas are ceilings while other trajectories remain: a bucket passes its quota only
          // when every distinct trajectory of the other buckets is in.
          const distinctOf = (f: (x: IcdTrajectory) => boolean, list: readonly IcdTrajectory[]) =>
            distinctKeys(list.filter(f)).size;
          const unique = bestPerPointer(all);
          const allIn = (f: (x: IcdTrajectory) => boolean) => distinctOf(f, final) === distinctOf(f, unique);
          if (distinctOf(isPositive, final) > positiveQuota) expect(allIn(isZero)).toBe(true);
          if (distinctOf(isPartial, final) > partialQuota) {
            expect(allIn(isZero)).toBe(true);
            expect(allIn(isPositive)).toBe(true);
          }
          // Copies pass no quota when an acc-0 trajectory can be repeated instead.
          if (result.repeated > 0 && unique.some(isZero)) {
            expect(final.filter(isPositive).length).toBe(distinctOf(isPositive, unique));
            expect(final.filter(isPartial).length).toBe(distinctOf(isPartial, unique));
          }
          // The minimums, when the input has them and M leaves room.
          if (target >= positiveMin + partialMin) {
            expect(distinctOf(isPositive, final)).toBeGreaterThanOrEqual(
              Math.min(positiveMin, distinctOf(isPositive, unique)),
            );
            expect(distinctOf(isPartial, final)).toBeGreaterThanOrEqual(
              Math.min(partialMin, distinctOf(isPartial, unique)),
            );
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
