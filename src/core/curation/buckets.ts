import { DEFAULT_CURATION_SETTINGS } from './settings';
import type { PromptStats } from './episodes';

/**
 * A prompt's difficulty bucket on mean phase-1 NDCG: `B` mastered, `A` at the edge of competence,
 * `0` unsolved.
 */
export type DifficultyBucket = 'B' | 'A' | '0';

/** B > high, A in [low, high], 0 < low on mean phase-1 NDCG (docs/method.md#difficulty-buckets). */
export function bucketOf(
  meanNdcg: number,
  thresholds: { bucketLow: number; bucketHigh: number } = DEFAULT_CURATION_SETTINGS,
): DifficultyBucket {
  if (meanNdcg > thresholds.bucketHigh) return 'B';
  if (meanNdcg >= thresholds.bucketLow) return 'A';
  return '0';
}

/** A prompt's bucket with the mean NDCG it was assigned from. */
export interface BucketAssignment {
  promptUid: string;
  bucket: DifficultyBucket;
  meanNdcg: number;
}

/** Each prompt's bucket (`bucketOf`) from its statistics. */
export function assignBuckets(
  stats: readonly PromptStats[],
  thresholds: { bucketLow: number; bucketHigh: number } = DEFAULT_CURATION_SETTINGS,
): BucketAssignment[] {
  return stats.map((s) => ({
    promptUid: s.promptUid,
    bucket: bucketOf(s.meanNdcg, thresholds),
    meanNdcg: s.meanNdcg,
  }));
}

/** Prompts per bucket. */
export function countBuckets(assignments: readonly BucketAssignment[]): Record<DifficultyBucket, number> {
  const counts: Record<DifficultyBucket, number> = { B: 0, A: 0, '0': 0 };
  for (const a of assignments) counts[a.bucket]++;
  return counts;
}
