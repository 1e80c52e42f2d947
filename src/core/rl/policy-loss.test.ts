import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors';
import type { LossAggregation } from './aggregation';
import { klPenalty } from './kl';
import { POLICY_LOSS_KINDS, POLICY_LOSSES, policyLoss, type PolicyLossKind } from './policy-loss';
import vectors from './__fixtures__/policy_losses.json';
import { maxMatrixError, relativeError } from '../../testing/closeness';

interface LossCase {
  loss: PolicyLossKind | 'k3_kl';
  agg: LossAggregation;
  clip_low?: number;
  clip_high?: number;
  mask: number[][];
  old_logp: number[][];
  new_logp: number[][];
  advantages?: number[];
  value: number;
  grad_new_logp: number[][];
  clip_fraction?: number | null;
  seq_ratio?: number[] | null;
}

const cases = (vectors.cases as LossCase[]).map((c, index) => ({ ...c, index }));

describe('policy losses against the PyTorch reference', () => {
  it('has all the reference cases', () => {
    expect(cases.length).toBe(120);
  });

  it.each(cases.filter((c) => c.loss !== 'k3_kl'))('case $index: $loss / $agg', (c) => {
    const result = policyLoss({
      kind: c.loss as PolicyLossKind,
      oldLogProbs: c.old_logp,
      newLogProbs: c.new_logp,
      mask: c.mask,
      advantages: c.advantages!,
      clipLow: c.clip_low!,
      clipHigh: c.clip_high!,
      aggregation: c.agg,
    });
    expect(relativeError(result.value, c.value)).toBeLessThan(1e-9);
    expect(maxMatrixError(result.gradNewLogProbs, c.grad_new_logp)).toBeLessThan(1e-9);
    if (typeof c.clip_fraction === 'number') expect(result.clipFraction).toBeCloseTo(c.clip_fraction, 12);
    if (Array.isArray(c.seq_ratio)) {
      c.seq_ratio.forEach((r, i) => expect(relativeError(result.sequenceRatios![i]!, r)).toBeLessThan(1e-9));
    }
  });

  it.each(cases.filter((c) => c.loss === 'k3_kl'))('case $index: k3 KL / $agg', (c) => {
    const result = klPenalty({
      estimator: 'k3',
      oldLogProbs: c.old_logp,
      newLogProbs: c.new_logp,
      mask: c.mask,
      aggregation: c.agg,
    });
    expect(relativeError(result.value, c.value)).toBeLessThan(1e-9);
    expect(maxMatrixError(result.gradNewLogProbs, c.grad_new_logp)).toBeLessThan(1e-9);
  });
});

const logProbRow = (length: number) =>
  fc.array(fc.double({ min: -6, max: -0.01, noNaN: true }), { minLength: length, maxLength: length });

const batchArbitrary = fc
  .tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 8 }))
  .chain(([sequences, tokens]) =>
    fc.record({
      old: fc.array(logProbRow(tokens), { minLength: sequences, maxLength: sequences }),
      delta: fc.array(
        fc.array(fc.double({ min: -0.3, max: 0.3, noNaN: true }), { minLength: tokens, maxLength: tokens }),
        {
          minLength: sequences,
          maxLength: sequences,
        },
      ),
      mask: fc.array(fc.array(fc.constantFrom(0, 1, 1), { minLength: tokens, maxLength: tokens }), {
        minLength: sequences,
        maxLength: sequences,
      }),
      advantages: fc.array(fc.double({ min: -3, max: 3, noNaN: true }), {
        minLength: sequences,
        maxLength: sequences,
      }),
    }),
  );

const aggregations: LossAggregation[] = ['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum'];

describe('policy loss properties', () => {
  it('a ratio of 1 leaves PPO and GSPO unclipped, with gradient -A times the aggregation weight', () => {
    fc.assert(
      fc.property(
        batchArbitrary,
        fc.constantFrom<PolicyLossKind>('ppo_clip', 'gspo'),
        fc.constantFrom(...aggregations),
        (batch, kind, aggregation) => {
          const result = policyLoss({
            kind,
            oldLogProbs: batch.old,
            newLogProbs: batch.old,
            mask: batch.mask,
            advantages: batch.advantages,
            clipLow: 3e-4,
            clipHigh: 4e-4,
            aggregation,
          });
          expect(result.clipFraction).toBe(0);
          const reference = policyLoss({
            kind: 'ppo_clip',
            oldLogProbs: batch.old,
            newLogProbs: batch.old,
            mask: batch.mask,
            advantages: batch.advantages,
            clipLow: 1e9,
            clipHigh: 1e9,
            aggregation,
          });
          expect(result.value).toBeCloseTo(reference.value, 12);
          expect(maxMatrixError(result.gradNewLogProbs, reference.gradNewLogProbs)).toBeLessThan(1e-12);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('gradients match central finite differences (PPO, GSPO and k1/k2/k3 KL)', () => {
    fc.assert(
      fc.property(batchArbitrary, fc.constantFrom(...aggregations), (batch, aggregation) => {
        const newLogProbs = batch.old.map((row, i) => row.map((v, t) => v + batch.delta[i]![t]!));
        type Loss = (n: number[][]) => { value: number; gradNewLogProbs: number[][] };
        const losses: Loss[] = [
          // GSPO's stop-gradient form is built so that its gradient is the true derivative of the
          // sequence-ratio objective, so finite differences of the value check it too.
          ...(['ppo_clip', 'gspo'] as const).map(
            (kind): Loss =>
              (n) =>
                policyLoss({
                  kind,
                  oldLogProbs: batch.old,
                  newLogProbs: n,
                  mask: batch.mask,
                  advantages: batch.advantages,
                  clipLow: 0.2,
                  clipHigh: 0.28,
                  aggregation,
                }),
          ),
          ...(['k1', 'k2', 'k3'] as const).map(
            (estimator): Loss =>
              (n) =>
                klPenalty({
                  estimator,
                  oldLogProbs: batch.old,
                  newLogProbs: n,
                  mask: batch.mask,
                  aggregation,
                }),
          ),
        ];
        const h = 1e-6;
        for (const loss of losses) {
          const analytic = loss(newLogProbs).gradNewLogProbs;
          newLogProbs.forEach((row, i) =>
            row.forEach((v, t) => {
              const plus = newLogProbs.map((r) => [...r]);
              const minus = newLogProbs.map((r) => [...r]);
              plus[i]![t] = v + h;
              minus[i]![t] = v - h;
              const numeric = (loss(plus).value - loss(minus).value) / (2 * h);
              // Kinks of the clip are measure-zero; the tolerance covers the h-neighbourhood of one.
              expect(Math.abs(numeric - analytic[i]![t]!)).toBeLessThan(1e-5 + 1e-3 * Math.abs(numeric));
            }),
          );
        }
      }),
      { numRuns: 200 },
    );
  });

  it('GSPO uses one ratio per sequence: exp(mean masked (new - old))', () => {
    const result = policyLoss({
      kind: 'gspo',
      oldLogProbs: [[-1, -1, -1]],
      newLogProbs: [[-0.9, -1.1, -0.5]],
      mask: [[1, 1, 0]],
      advantages: [1],
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: 'seq-mean-token-mean',
    });
    expect(result.sequenceRatios![0]).toBeCloseTo(1, 12);
    expect(result.gradNewLogProbs[0]![2]).toBe(0);
  });

  it("GSPO clamps the sequence log-ratio at maxLogRatio (verl's 10): the value uses the clamp, the gradient is 0", () => {
    const input = (delta: number, maxLogRatio?: number) => ({
      kind: 'gspo' as const,
      oldLogProbs: [[-1, -2]],
      newLogProbs: [[-1 + delta, -2 + delta]],
      mask: [[1, 1]],
      // A negative advantage keeps the unclipped branch active, so only the clamp can stop the gradient.
      advantages: [-1],
      clipLow: 3e-4,
      clipHigh: 4e-4,
      aggregation: 'seq-mean-token-mean' as const,
      ...(maxLogRatio !== undefined && { maxLogRatio }),
    });
    const clamped = policyLoss(input(1, 0.5));
    expect(clamped.value).toBeCloseTo(Math.exp(0.5), 12);
    expect(clamped.gradNewLogProbs).toEqual([[0, 0]]);
    expect(clamped.sequenceRatios![0]).toBeCloseTo(Math.exp(0.5), 12);
    expect(clamped.clipFraction).toBe(0);
    const below = policyLoss(input(0.4, 0.5));
    expect(below.value).toBeCloseTo(Math.exp(0.4), 12);
    below.gradNewLogProbs[0]!.forEach((g) => expect(g).toBeCloseTo(0.5 * Math.exp(0.4), 12));
    // The default clamp is 10.
    const huge = policyLoss(input(12));
    expect(huge.value).toBeCloseTo(Math.exp(10), 6);
    expect(huge.gradNewLogProbs).toEqual([[0, 0]]);
  });

  it('a sequence with no policy token is left out of the sequence mean', () => {
    const withEmpty = policyLoss({
      kind: 'ppo_clip',
      oldLogProbs: [
        [-1, -1],
        [-2, -2],
      ],
      newLogProbs: [
        [-0.9, -1],
        [-2, -2],
      ],
      mask: [
        [1, 1],
        [0, 0],
      ],
      advantages: [1, 5],
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: 'seq-mean-token-mean',
    });
    const alone = policyLoss({
      kind: 'ppo_clip',
      oldLogProbs: [[-1, -1]],
      newLogProbs: [[-0.9, -1]],
      mask: [[1, 1]],
      advantages: [1],
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: 'seq-mean-token-mean',
    });
    expect(withEmpty.value).toBeCloseTo(alone.value, 14);
  });

  it('names the argument whose shape is wrong', () => {
    const call = () =>
      policyLoss({
        kind: 'ppo_clip',
        oldLogProbs: [[-1, -1]],
        newLogProbs: [[-1]],
        mask: [[1, 1]],
        advantages: [1],
        clipLow: 0.2,
        clipHigh: 0.2,
        aggregation: 'token-mean',
      });
    expect(call).toThrowError(InvalidArgumentError);
    expect(call).toThrow(/newLogProbs\[0\]/);
    expect(() =>
      policyLoss({
        kind: 'ppo_clip',
        oldLogProbs: [[-1]],
        newLogProbs: [[-1]],
        mask: [[1]],
        advantages: [1, 2],
        clipLow: 0.2,
        clipHigh: 0.2,
        aggregation: 'token-mean',
      }),
    ).toThrow(/'advantages'/);
    expect(() =>
      policyLoss({
        kind: 'ppo_clip',
        oldLogProbs: [[Number.NaN]],
        newLogProbs: [[-1]],
        mask: [[1]],
        advantages: [1],
        clipLow: 0.2,
        clipHigh: 0.2,
        aggregation: 'mean' as never,
      }),
    ).toThrow(/oldLogProbs\[0\]\[0\]/);
  });
});

describe('POLICY_LOSSES', () => {
  const base = {
    oldLogProbs: [[-1, -1.2]],
    newLogProbs: [[-0.9, -1.3]],
    mask: [[1, 1]],
    advantages: [1],
    clipLow: 0.2,
    clipHigh: 0.2,
    aggregation: 'token-mean' as const,
  };
  const optionValues = { maxLogRatio: 5, clipRatioC: 3, logRatioClamp: 20 } as const;

  it('lists its kinds once, in order, and refuses any other kind naming the known ones', () => {
    expect(POLICY_LOSS_KINDS).toEqual(Object.keys(POLICY_LOSSES));
    const call = () => policyLoss({ ...base, kind: 'dapo' as PolicyLossKind });
    expect(call).toThrow(InvalidArgumentError);
    expect(call).toThrow(/'kind'.*'ppo_clip', 'gspo', got dapo/);
    expect(() => policyLoss({ ...base, kind: 'toString' as PolicyLossKind })).toThrow(InvalidArgumentError);
  });

  it.each(POLICY_LOSS_KINDS)('%s takes its own options and refuses the others by name', (kind) => {
    const own = POLICY_LOSSES[kind].options as readonly string[];
    for (const option of Object.keys(optionValues) as Array<keyof typeof optionValues>) {
      const call = () => policyLoss({ ...base, kind, [option]: optionValues[option] });
      if (own.includes(option)) expect(call().value).toBeTypeOf('number');
      else expect(call).toThrow(new RegExp(`'${option}'.*only, not '${kind}'`));
    }
  });

  it("each kind's ratio is its own: PPO per token, GSPO one per sequence", () => {
    const ppo = POLICY_LOSSES.ppo_clip.importanceRatios(base, { maxLogRatio: 10, logRatioClamp: null });
    expect(ppo.ratio[0]![0]).toBeCloseTo(Math.exp(0.1), 14);
    expect(ppo.ratio[0]![1]).toBeCloseTo(Math.exp(-0.1), 14);
    const gspo = POLICY_LOSSES.gspo.importanceRatios(base, { maxLogRatio: 10, logRatioClamp: null });
    expect(gspo.sequenceRatios![0]).toBeCloseTo(1, 14);
    expect(gspo.ratio).toEqual([[gspo.sequenceRatios![0]!, gspo.sequenceRatios![0]!]]);
  });
});
