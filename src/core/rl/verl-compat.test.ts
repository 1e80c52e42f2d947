import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LossAggregation } from './aggregation';
import { klPenalty } from './kl';
import { policyLoss } from './policy-loss';

/*
 * Reference functions written the way verl computes them (verl/trainer/ppo/core_algos.py:
 * agg_loss, compute_policy_loss_vanilla, kl_penalty_forward), on padded rectangular batches with
 * a response mask, value only. The project's closed-form gradients are checked against central
 * finite differences of these values.
 */
const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** verl `agg_loss(loss_mat, loss_mask, loss_agg_mode)`. */
function verlAggLoss(loss: number[][], mask: number[][], mode: LossAggregation): number {
  const seqSums = loss.map((row, i) => row.reduce((s, l, t) => s + l * mask[i]![t]!, 0));
  const seqCounts = mask.map((row) => row.reduce((s, m) => s + m, 0));
  if (mode === 'token-mean') return seqSums.reduce((a, b) => a + b, 0) / seqCounts.reduce((a, b) => a + b, 0);
  if (mode === 'seq-mean-token-sum') return seqSums.reduce((a, b) => a + b, 0) / seqSums.length;
  if (mode === 'seq-mean-token-mean')
    return seqSums.reduce((s, v, i) => s + v / seqCounts[i]!, 0) / seqSums.length;
  // seq-mean-token-sum-norm: sum of sequence sums over loss_mask.shape[-1] (the padded length).
  return seqSums.reduce((a, b) => a + b, 0) / mask[0]!.length;
}

/** verl `compute_policy_loss_vanilla` (dual-clip with clip_ratio_c, log-ratio clamped to ±20). */
function verlVanillaLoss(
  old: number[][],
  logp: number[][],
  advantages: number[],
  mask: number[][],
  clipLow: number,
  clipHigh: number,
  clipRatioC: number,
  mode: LossAggregation,
) {
  let clipped = 0;
  let lower = 0;
  let count = 0;
  const losses = logp.map((row, i) =>
    row.map((lp, t) => {
      const A = advantages[i]!;
      const negativeApproxKl = clamp(lp - old[i]![t]!, -20, 20);
      const ratio = Math.exp(negativeApproxKl);
      const pg1 = -A * ratio;
      const pg2 = -A * clamp(ratio, 1 - clipLow, 1 + clipHigh);
      const clip1 = Math.max(pg1, pg2);
      const pg3 = -A * clipRatioC;
      const clip2 = Math.min(pg3, clip1);
      count += mask[i]![t]!;
      if (pg2 > pg1) clipped += mask[i]![t]!;
      if (clip1 > pg3 && A < 0) lower += mask[i]![t]!;
      return A < 0 ? clip2 : clip1;
    }),
  );
  return {
    value: verlAggLoss(losses, mask, mode),
    clipFraction: clipped / count,
    clipFractionLower: lower / count,
  };
}

/** verl `kl_penalty_forward(logprob, ref_logprob, 'low_var_kl')`, aggregated with `agg_loss`. */
function verlLowVarKl(logp: number[][], ref: number[][], mask: number[][], mode: LossAggregation): number {
  const kl = logp.map((row, i) =>
    row.map((lp, t) => {
      const d = clamp(ref[i]![t]! - lp, -20, 20);
      return clamp(Math.exp(d) - d - 1, -10, 10);
    }),
  );
  return verlAggLoss(kl, mask, mode);
}

const modes: LossAggregation[] = [
  'token-mean',
  'seq-mean-token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-sum-norm',
];

/** Rectangular batches with every sequence's first token masked in (verl's padded tensors; no empty response). */
const batch = fc.tuple(fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 6 })).chain(([n, t]) =>
  fc.record({
    old: fc.array(fc.array(fc.double({ min: -8, max: -0.01, noNaN: true }), { minLength: t, maxLength: t }), {
      minLength: n,
      maxLength: n,
    }),
    // Wide enough to reach the dual clip (ratio 3) and, rarely, the ±20 clamps.
    delta: fc.array(
      fc.array(fc.oneof(fc.double({ min: -1.5, max: 1.5, noNaN: true }), fc.constantFrom(-25, 25)), {
        minLength: t,
        maxLength: t,
      }),
      { minLength: n, maxLength: n },
    ),
    mask: fc
      .array(fc.array(fc.constantFrom(0, 1, 1), { minLength: t, maxLength: t }), {
        minLength: n,
        maxLength: n,
      })
      .map((m) => m.map((row) => [1, ...row.slice(1)])),
    advantages: fc.array(fc.double({ min: -3, max: 3, noNaN: true }), { minLength: n, maxLength: n }),
  }),
);

function finiteDifferences(f: (x: number[][]) => number, x: number[][], analytic: number[][]): void {
  const h = 1e-6;
  x.forEach((row, i) =>
    row.forEach((v, t) => {
      const plus = x.map((r) => [...r]);
      const minus = x.map((r) => [...r]);
      plus[i]![t] = v + h;
      minus[i]![t] = v - h;
      const numeric = (f(plus) - f(minus)) / (2 * h);
      expect(Math.abs(numeric - analytic[i]![t]!)).toBeLessThan(1e-5 + 1e-3 * Math.abs(numeric));
    }),
  );
}

type BatchValue = typeof batch extends fc.Arbitrary<infer Value> ? Value : never;

/** A property over 300 random batches and every aggregation mode, with the batch's new log-probs (old + delta). */
function forEachBatch(check: (b: BatchValue, aggregation: LossAggregation, logp: number[][]) => void): void {
  fc.assert(
    fc.property(batch, fc.constantFrom(...modes), (b, aggregation) =>
      check(
        b,
        aggregation,
        b.old.map((row, i) => row.map((v, t) => v + b.delta[i]![t]!)),
      ),
    ),
    { numRuns: 300 },
  );
}

describe('verl-compatible options, against verl written out', () => {
  it('PPO-clip with dual-clip (clipRatioC 3) and the ±20 log-ratio clamp: value, clip fractions and gradient', () => {
    forEachBatch((b, aggregation, logp) => {
      const result = policyLoss({
        kind: 'ppo_clip',
        oldLogProbs: b.old,
        newLogProbs: logp,
        mask: b.mask,
        advantages: b.advantages,
        clipLow: 0.2,
        clipHigh: 0.28,
        aggregation,
        clipRatioC: 3,
        logRatioClamp: 20,
      });
      const verl = verlVanillaLoss(b.old, logp, b.advantages, b.mask, 0.2, 0.28, 3, aggregation);
      expect(result.value).toBeCloseTo(verl.value, 9);
      expect(result.clipFraction).toBeCloseTo(verl.clipFraction, 12);
      expect(result.clipFractionLower).toBeCloseTo(verl.clipFractionLower, 12);
      finiteDifferences(
        (n) => verlVanillaLoss(b.old, n, b.advantages, b.mask, 0.2, 0.28, 3, aggregation).value,
        logp,
        result.gradNewLogProbs,
      );
    });
  });

  it('the dual clip bounds the loss of a negative advantage at -A x clipRatioC, with no gradient there', () => {
    // A token whose ratio is 5 with advantage -1: the plain loss is -A x 5.
    const negativeAdvantage = (options: { clipRatioC?: number }) =>
      policyLoss({
        kind: 'ppo_clip',
        oldLogProbs: [[-2]],
        newLogProbs: [[-2 + Math.log(5)]],
        mask: [[1]],
        advantages: [-1],
        clipLow: 0.2,
        clipHigh: 0.2,
        aggregation: 'token-mean',
        ...options,
      });
    const result = negativeAdvantage({ clipRatioC: 3 });
    expect(result.value).toBeCloseTo(3, 12);
    expect(result.gradNewLogProbs).toEqual([[0]]);
    expect(result.clipFractionLower).toBe(1);
    const plain = negativeAdvantage({});
    expect(plain.value).toBeCloseTo(5, 12);
  });

  it("low_var_kl is verl's k3 with the log-ratio clamped to ±20 and each token's value to ±10", () => {
    forEachBatch((b, aggregation, logp) => {
      const result = klPenalty({
        estimator: 'low_var_kl',
        oldLogProbs: b.old,
        newLogProbs: logp,
        mask: b.mask,
        aggregation,
      });
      expect(result.value).toBeCloseTo(verlLowVarKl(logp, b.old, b.mask, aggregation), 9);
      finiteDifferences((n) => verlLowVarKl(n, b.old, b.mask, aggregation), logp, result.gradNewLogProbs);
    });
    // A reference far above the policy: k3 would be e^5 - 6; low_var_kl caps it at 10, gradient 0.
    const capped = klPenalty({
      estimator: 'low_var_kl',
      oldLogProbs: [[-1]],
      newLogProbs: [[-6]],
      mask: [[1]],
      aggregation: 'token-mean',
    });
    expect(capped).toEqual({ value: 10, gradNewLogProbs: [[0]] });
  });
});
