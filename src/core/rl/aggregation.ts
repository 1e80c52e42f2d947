import { InvalidArgumentError } from '../errors';

/**
 * How per-token losses become one number (verl's `loss_agg_mode`):
 * - `token-mean`: sum(loss * mask) / sum(mask) over the whole batch;
 * - `seq-mean-token-mean`: mean over sequences of each sequence's masked token mean;
 * - `seq-mean-token-sum`: mean over sequences of each sequence's masked token sum;
 * - `seq-mean-token-sum-norm` (Dr. GRPO): the sum of every sequence's masked token sum, divided by
 *   the batch's padded length, here the longest row of the mask (docs/method.md#policy-losses).
 * Sequences with no masked-in token are left out of the sequence mean (verl would divide by zero).
 */
export type LossAggregation =
  | 'token-mean'
  | 'seq-mean-token-mean'
  | 'seq-mean-token-sum'
  | 'seq-mean-token-sum-norm';

export const LOSS_AGGREGATIONS: readonly LossAggregation[] = [
  'token-mean',
  'seq-mean-token-mean',
  'seq-mean-token-sum',
  'seq-mean-token-sum-norm',
];

export function assertAggregation(aggregation: unknown): asserts aggregation is LossAggregation {
  if (!LOSS_AGGREGATIONS.includes(aggregation as LossAggregation)) {
    throw new InvalidArgumentError({
      argument: 'aggregation',
      message: `must be one of ${LOSS_AGGREGATIONS.join(', ')}, got ${String(aggregation)}`,
    });
  }
}

/**
 * The weight of each token in the aggregate: value = sum_it weight_it * loss_it, and so
 * d value / d loss_it = weight_it. Returned as a matrix with the shape of `mask`.
 */
export function aggregationWeights(mask: number[][], aggregation: LossAggregation): number[][] {
  if (aggregation === 'token-mean') {
    let total = 0;
    for (const row of mask) for (const m of row) total += m;
    return mask.map((row) => row.map((m) => (total > 0 ? m / total : 0)));
  }
  if (aggregation === 'seq-mean-token-sum-norm') {
    const width = Math.max(0, ...mask.map((row) => row.length));
    return mask.map((row) => row.map((m) => (width > 0 ? m / width : 0)));
  }
  const sequenceTotals = mask.map((row) => row.reduce((sum, m) => sum + m, 0));
  const contributing = sequenceTotals.filter((total) => total > 0).length;
  return mask.map((row, i) => {
    const total = sequenceTotals[i]!;
    if (total <= 0 || contributing === 0) return row.map(() => 0);
    const perToken = aggregation === 'seq-mean-token-mean' ? 1 / (total * contributing) : 1 / contributing;
    return row.map((m) => m * perToken);
  });
}
