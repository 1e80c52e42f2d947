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

describe('the final trajectories: quotas and property 6 together (issue 24, item 12)', () => {
  it('a query with few distinct trajectories is filled to 12 by its acc-0 ones, never past a quota', () => {
    const controller = new TrajectoryQualityController();
    const final = controller.selectFinalTrajectories([t(1), t(1, [2, 3]), t(0.6), t(0, [4, 5])]);
    expect(final).toHaveLength(12);
    expect(final.filter(isPositive)).toHaveLength(2);
    expect(final.filter(isPartial)).toHaveLength(1);
    expect(final.filter(isZero)).toHaveLength(9);
  });

  it('a query without acc-0 trajectories keeps fewer than 12: its positives and partials up to their quotas', () => {
    const controller = new TrajectoryQualityController();
    const all = [
      t(1),
      t(1, [1, 2]),
      t(1, [2, 3]),
      t(1, [3, 4]),
      t(1, [4, 5]),
      t(0.6),
      t(0.3, [1, 2]),
      t(0.9),
    ];
    const final = controller.selectFinalTrajectories(all);
    expect(final.filter(isPositive)).toHaveLength(4);
    expect(final.filter(isPartial)).toHaveLength(2);
    expect(final).toHaveLength(6);
    expect(controller.selectFinalTrajectories([t(1)])).toEqual([t(1)]);
  });

  it('for any trajectories and any M: the quotas hold (copies counted), only acc-0 ones repeat, and the count is M whenever the quotas allow it', () => {
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
          const final = controller.selectFinalTrajectories(all);
          for (const x of final) expect(all).toContain(x);
          expect(final.length).toBeLessThanOrEqual(target);
          expect(final.filter(isPositive).length).toBeLessThanOrEqual(positiveQuota);
          expect(final.filter(isPartial).length).toBeLessThanOrEqual(partialQuota);
          // Positives and partials are never repeated; acc-0 trajectories fill the rest.
          const nonZero = final.filter((x) => !isZero(x));
          expect(new Set(nonZero).size).toBe(nonZero.length);
          const positives = all.filter(isPositive).length;
          const partials = all.filter(isPartial).length;
          const fillable = all.some(isZero)
            ? target
            : Math.min(target, Math.min(positives, positiveQuota) + Math.min(partials, partialQuota));
          // Property 6: exactly M whenever M fits in the quotas.
          expect(final).toHaveLength(fillable);
          // The minimums, when the input has them and M leaves room.
          if (target >= positiveMin + partialMin) {
            expect(final.filter(isPositive).length).toBeGreaterThanOrEqual(Math.min(positiveMin, positives));
            expect(final.filter(isPartial).length).toBeGreaterThanOrEqual(Math.min(partialMin, partials));
          }
          // Every distinct acc-0 trajectory is used before any is repeated.
          const zeros = all.filter(isZero);
          const chosenZeros = final.filter(isZero);
          if (chosenZeros.length >= zeros.length) expect(new Set(chosenZeros).size).toBe(new Set(zeros).size);
        },
      ),
      { numRuns: 300 },
    );
  });
});
