import { InvalidArgumentError } from '../errors';
import { aggregationWeights, assertAggregation, type LossAggregation } from './aggregation';
import { assertFiniteMasked, assertMask, assertMatrix, assertSameShape } from './validate';

/** The policy loss: PPO-clip (token ratios) or GSPO (sequence ratios). */
export type PolicyLossKind = 'ppo_clip' | 'gspo';

/**
 * `policyLoss`'s input: both log-probs, the mask, the advantages, the clip range and the
 * aggregation.
 */
export interface PolicyLossInput {
  kind: PolicyLossKind;
  /** Per-token log-probs under the policy that generated the tokens (batch x tokens). */
  oldLogProbs: number[][];
  /** Per-token log-probs under the policy being updated. */
  newLogProbs: number[][];
  /** 1 on policy-generated tokens, 0 on prompt, observation and answer tokens (state masking). */
  mask: number[][];
  /** One advantage per sequence, or one per token. */
  advantages: number[] | number[][];
  /** ratio is clipped to [1 - clipLow, 1 + clipHigh]. */
  clipLow: number;
  clipHigh: number;
  aggregation: LossAggregation;
  /** GSPO only: the sequence log-ratio is clamped from above at this value (verl uses 10). */
  maxLogRatio?: number;
  /**
   * PPO-clip only: dual-clip (Ye et al. 2020, verl's `clip_ratio_c`, 3 there). With a negative
   * advantage the token loss is at most -A * clipRatioC. `null` or absent: off. Must be > 1.
   */
  clipRatioC?: number | null;
  /** PPO-clip only: the token log-ratio is clamped to ±this before exp (verl: 20). `null` or absent: off. */
  logRatioClamp?: number | null;
}

/** The policy loss, its gradient by the new log-probs, and the clip figures. */
export interface PolicyLossResult {
  value: number;
  /** d value / d newLogProbs[i][t], zero off the mask. Feed it to a backend as `sum g_t * logp_t`. */
  gradNewLogProbs: number[][];
  /** Share of masked-in tokens (mask-weighted) whose clipped branch was the active one. */
  clipFraction: number;
  /** GSPO only: the sequence importance ratio exp(mean masked (new - old)) of each sequence. */
  sequenceRatios?: number[];
  /** With dual-clip: share of masked-in tokens whose negative-advantage loss the dual clip bounded (verl's pg_clipfrac_lower). */
  clipFractionLower?: number;
}

/**
 * PPO-clip and GSPO policy losses on plain arrays, with their exact gradient with respect to
 * the new per-token log-probs. Definitions follow verl (`compute_policy_loss_vanilla`,
 * `compute_policy_loss_gspo`); the reference values in `__fixtures__/policy_losses.json` were
 * computed with PyTorch autograd in float64.
 *
 * Per token, loss = max(-A * ratio, -A * clip(ratio, 1 - clipLow, 1 + clipHigh)). The clipped
 * branch has zero gradient; where both branches are equal the unclipped one carries it.
 * PPO: ratio_t = exp(new_t - old_t). GSPO: every token of sequence i uses
 * exp(new_t - sg(new_t) + sg(log s_i)) whose value is s_i and whose derivative in new_t is s_i.
 */
export function policyLoss(input: PolicyLossInput): PolicyLossResult {
  const { kind, oldLogProbs, newLogProbs, mask, clipLow, clipHigh, aggregation } = input;
  if (kind !== 'ppo_clip' && kind !== 'gspo') {
    throw new InvalidArgumentError({
      argument: 'kind',
      message: `must be 'ppo_clip' or 'gspo', got ${String(kind)}`,
    });
  }
  assertMatrix('oldLogProbs', oldLogProbs);
  assertMatrix('newLogProbs', newLogProbs);
  assertMatrix('mask', mask);
  assertSameShape('oldLogProbs', oldLogProbs, 'newLogProbs', newLogProbs);
  assertSameShape('oldLogProbs', oldLogProbs, 'mask', mask);
  assertMask(mask);
  assertFiniteMasked('oldLogProbs', oldLogProbs, mask);
  assertFiniteMasked('newLogProbs', newLogProbs, mask);
  if (!(Number.isFinite(clipLow) && clipLow >= 0))
    throw new InvalidArgumentError({
      argument: 'clipLow',
      message: `must be a finite number >= 0, got ${clipLow}`,
    });
  if (!(Number.isFinite(clipHigh) && clipHigh >= 0))
    throw new InvalidArgumentError({
      argument: 'clipHigh',
      message: `must be a finite number >= 0, got ${clipHigh}`,
    });
  assertAggregation(aggregation);
  const maxLogRatio = input.maxLogRatio ?? 10;
  if (!(maxLogRatio > 0))
    throw new InvalidArgumentError({ argument: 'maxLogRatio', message: `must be > 0, got ${maxLogRatio}` });
  const clipRatioC = input.clipRatioC ?? null;
  const logRatioClamp = input.logRatioClamp ?? null;
  if (clipRatioC !== null && !(Number.isFinite(clipRatioC) && clipRatioC > 1))
    throw new InvalidArgumentError({
      argument: 'clipRatioC',
      message: `must be a finite number > 1, got ${clipRatioC}`,
    });
  if (logRatioClamp !== null && !(logRatioClamp > 0))
    throw new InvalidArgumentError({
      argument: 'logRatioClamp',
      message: `must be > 0, got ${logRatioClamp}`,
    });
  if (kind === 'gspo' && (clipRatioC !== null || logRatioClamp !== null)) {
    throw new InvalidArgumentError({
      argument: clipRatioC !== null ? 'clipRatioC' : 'logRatioClamp',
      message:
        "applies to 'ppo_clip' only (verl's GSPO has neither; it clamps the sequence log-ratio with maxLogRatio)",
    });
  }
  const advantageAt = advantageLookup(input.advantages, mask);

  const weights = aggregationWeights(mask, aggregation);
  const lower = 1 - clipLow;
  const upper = 1 + clipHigh;

  let sequenceLogRatios: number[] | undefined;
  if (kind === 'gspo') {
    sequenceLogRatios = mask.map((row, i) => {
      let sum = 0;
      let count = 0;
      row.forEach((m, t) => {
        if (m === 0) return;
        sum += m * (newLogProbs[i]![t]! - oldLogProbs[i]![t]!);
        count += m;
      });
      return count > 0 ? sum / count : 0;
    });
  }

  let value = 0;
  let clipped = 0;
  let clippedLower = 0;
  let maskTotal = 0;
  const gradNewLogProbs = mask.map((row, i) =>
    row.map((m, t) => {
      if (m === 0) return 0;
      const advantage = advantageAt(i, t);
      let ratio: number;
      let ratioDerivative: number;
      if (sequenceLogRatios) {
        const logRatio = sequenceLogRatios[i]!;
        // verl clamps the log of the sequence ratio from above; a clamped ratio has no gradient.
        ratio = Math.exp(Math.min(logRatio, maxLogRatio));
        ratioDerivative = logRatio > maxLogRatio ? 0 : ratio;
      } else {
        const logRatio = newLogProbs[i]![t]! - oldLogProbs[i]![t]!;
        // verl clamps the token log-ratio to ±20 before exp; a clamped ratio has no gradient.
        const clampedLogRatio =
          logRatioClamp === null ? logRatio : Math.min(logRatioClamp, Math.max(-logRatioClamp, logRatio));
        ratio = Math.exp(clampedLogRatio);
        ratioDerivative = clampedLogRatio === logRatio ? ratio : 0;
      }
      const unclippedLoss = -advantage * ratio;
      const clippedLoss = -advantage * Math.min(Math.max(ratio, lower), upper);
      let tokenLoss = Math.max(unclippedLoss, clippedLoss);
      const weight = weights[i]![t]!;
      maskTotal += m;
      if (clippedLoss > unclippedLoss) clipped += m;
      // Dual-clip: a negative advantage's loss is bounded by -A * c (a constant: no gradient).
      if (clipRatioC !== null && advantage < 0 && tokenLoss > -advantage * clipRatioC) {
        tokenLoss = -advantage * clipRatioC;
        clippedLower += m;
        value += weight * tokenLoss;
        return 0;
      }
      value += weight * tokenLoss;
      if (clippedLoss > unclippedLoss) return 0;
      return weight * -advantage * ratioDerivative;
    }),
  );
  const result: PolicyLossResult = {
    value,
    gradNewLogProbs,
    clipFraction: maskTotal > 0 ? clipped / maskTotal : 0,
  };
  if (clipRatioC !== null) result.clipFractionLower = maskTotal > 0 ? clippedLower / maskTotal : 0;
  if (sequenceLogRatios)
    result.sequenceRatios = sequenceLogRatios.map((lr) => Math.exp(Math.min(lr, maxLogRatio)));
  return result;
}

function advantageLookup(
  advantages: number[] | number[][],
  mask: number[][],
): (i: number, t: number) => number {
  if (!Array.isArray(advantages))
    throw new InvalidArgumentError({
      argument: 'advantages',
      message: 'expected number[] (per sequence) or number[][] (per token)',
    });
  if (advantages.length !== mask.length) {
    throw new InvalidArgumentError({
      argument: 'advantages',
      message: `has ${advantages.length} entries but 'mask' has ${mask.length} sequences`,
    });
  }
  if (advantages.every((a) => typeof a === 'number')) {
    const perSequence = advantages as number[];
    perSequence.forEach((a, i) => {
      if (!Number.isFinite(a))
        throw new InvalidArgumentError({ argument: `advantages[${i}]`, message: `must be finite, got ${a}` });
    });
    return (i) => perSequence[i]!;
  }
  const perToken = advantages as number[][];
  assertMatrix('advantages', perToken);
  assertSameShape('mask', mask, 'advantages', perToken);
  assertFiniteMasked('advantages', perToken, mask);
  return (i, t) => perToken[i]![t]!;
}
