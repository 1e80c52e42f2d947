import { InvalidArgumentError } from '../errors';
import { aggregationWeights, assertAggregation, type LossAggregation } from './aggregation';
import { assertLogProbInputs } from './validate';

/**
 * Per-token KL estimators between the reference (old) policy and the current (new) one, after
 * Schulman's "Approximating KL divergence": with d = old - new,
 * k1 = -d, k2 = d^2 / 2, k3 = exp(d) - d - 1 (docs/method.md#kl: ratio = pi_old / pi_new, k3 = ratio - log ratio - 1).
 * `low_var_kl` is verl's k3: d clamped to ±20 and the token's value to ±10, no gradient where a
 * clamp holds.
 */
export type KlEstimator = 'k1' | 'k2' | 'k3' | 'low_var_kl';

export const KL_ESTIMATORS: readonly KlEstimator[] = ['k1', 'k2', 'k3', 'low_var_kl'];

/** verl's `low_var_kl` bounds: the log-ratio is clamped to ±20, each token's k3 to ±10. */
export const LOW_VAR_KL_LOG_RATIO_CLAMP = 20;
export const LOW_VAR_KL_VALUE_CLAMP = 10;

/** `klPenalty`'s input: the estimator, both log-probs, the mask and the aggregation. */
export interface KlPenaltyInput {
  estimator: KlEstimator;
  oldLogProbs: number[][];
  newLogProbs: number[][];
  mask: number[][];
  aggregation: LossAggregation;
}

/** The KL penalty and its gradient by the new log-probs. */
export interface KlPenaltyResult {
  value: number;
  /** d value / d newLogProbs[i][t], zero off the mask. */
  gradNewLogProbs: number[][];
}

/**
 * The KL penalty between the new and the reference log-probs, with its gradient in closed form
 * (docs/method.md#kl).
 */
export function klPenalty(input: KlPenaltyInput): KlPenaltyResult {
  const { estimator, oldLogProbs, newLogProbs, mask, aggregation } = input;
  if (!KL_ESTIMATORS.includes(estimator)) {
    throw new InvalidArgumentError({
      argument: 'estimator',
      message: `must be one of ${KL_ESTIMATORS.join(', ')}, got ${String(estimator)}`,
    });
  }
  assertLogProbInputs(oldLogProbs, newLogProbs, mask);
  assertAggregation(aggregation);

  const weights = aggregationWeights(mask, aggregation);
  let value = 0;
  const gradNewLogProbs = mask.map((row, i) =>
    row.map((m, t) => {
      if (m === 0) return 0;
      const d = oldLogProbs[i]![t]! - newLogProbs[i]![t]!;
      const weight = weights[i]![t]!;
      let kl: number;
      let derivative: number;
      if (estimator === 'k1') {
        kl = -d;
        derivative = 1;
      } else if (estimator === 'k2') {
        kl = 0.5 * d * d;
        derivative = -d;
      } else if (estimator === 'k3') {
        const ratio = Math.exp(d);
        kl = ratio - d - 1;
        derivative = 1 - ratio;
      } else {
        const clamped = Math.min(LOW_VAR_KL_LOG_RATIO_CLAMP, Math.max(-LOW_VAR_KL_LOG_RATIO_CLAMP, d));
        const ratio = Math.exp(clamped);
        const k3 = ratio - clamped - 1;
        kl = Math.min(LOW_VAR_KL_VALUE_CLAMP, Math.max(-LOW_VAR_KL_VALUE_CLAMP, k3));
        derivative = clamped !== d || kl !== k3 ? 0 : 1 - ratio;
      }
      value += weight * kl;
      return weight * derivative;
    }),
  );
  return { value, gradNewLogProbs };
}
