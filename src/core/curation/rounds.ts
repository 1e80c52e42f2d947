import type { BucketAssignment } from './buckets';
import type { PromptStats } from './episodes';
import { DEFAULT_CURATION_SETTINGS, FOCUSED_ROUND_BUDGETS, type RoundBudget } from './settings';
import { excludedPrompts, type Verdict, type VerificationLabel } from './verification';

export interface FocusedRound {
  name: string;
  budget: RoundBudget;
  promptUids: string[];
  /** Prompts left out by verification, with their label. */
  excluded: Array<{ promptUid: string; label: VerificationLabel }>;
  counts: Record<string, number>;
}

/**
 * Round 1 (docs/method.md#focused-rounds): bucket A prompts with mean final score <= 0.2 ("hard
 * A"), plus bucket 0 prompts that verification did not exclude. `stats` are from the run that
 * scored final answers (phase 2), `buckets` from phase 1.
 */
export function buildRound1(
  buckets: readonly BucketAssignment[],
  stats: readonly PromptStats[],
  verdicts: readonly Verdict[],
  options: { maxScore?: number; budget?: RoundBudget } = {},
): FocusedRound {
  const maxScore = options.maxScore ?? DEFAULT_CURATION_SETTINGS.round1MaxScore;
  const score = new Map(stats.map((s) => [s.promptUid, s.meanScore]));
  const excluded = excludedPrompts(verdicts);
  const hardA = buckets
    .filter((b) => b.bucket === 'A' && (score.get(b.promptUid) ?? 0) <= maxScore)
    .map((b) => b.promptUid);
  const zero = buckets.filter((b) => b.bucket === '0');
  const keptZero = zero.filter((b) => !excluded.has(b.promptUid)).map((b) => b.promptUid);
  const left = zero
    .filter((b) => excluded.has(b.promptUid))
    .map((b) => ({ promptUid: b.promptUid, label: excluded.get(b.promptUid)! }));
  return {
    name: 'focused_round1',
    budget: options.budget ?? { ...FOCUSED_ROUND_BUDGETS.round1 },
    promptUids: [...hardA, ...keptZero],
    excluded: left,
    counts: {
      hardA: hardA.length,
      bucket0: zero.length,
      bucket0Excluded: left.length,
      bucket0Kept: keptZero.length,
      total: hardA.length + keptZero.length,
    },
  };
}

/** Round 2: prompts of the previous round with mean final score <= 0.3, minus GT errors (and uncertain ones). */
export function buildRound2(
  previousRound: readonly string[],
  stats: readonly PromptStats[],
  verdicts: readonly Verdict[],
  options: { maxScore?: number; budget?: RoundBudget } = {},
): FocusedRound {
  const maxScore = options.maxScore ?? DEFAULT_CURATION_SETTINGS.round2MaxScore;
  const score = new Map(stats.map((s) => [s.promptUid, s.meanScore]));
  const excluded = excludedPrompts(verdicts);
  const low = previousRound.filter((uid) => score.has(uid) && (score.get(uid) ?? 0) <= maxScore);
  const kept = low.filter((uid) => !excluded.has(uid));
  const left = low
    .filter((uid) => excluded.has(uid))
    .map((uid) => ({ promptUid: uid, label: excluded.get(uid)! }));
  return {
    name: 'focused_round2',
    budget: options.budget ?? { ...FOCUSED_ROUND_BUDGETS.round2 },
    promptUids: kept,
    excluded: left,
    counts: {
      previous: previousRound.length,
      lowScore: low.length,
      excluded: left.length,
      total: kept.length,
    },
  };
}
