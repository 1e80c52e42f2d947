import type { BucketAssignment } from './buckets';
import type { PromptStats } from './episodes';
import { DEFAULT_CURATION_SETTINGS, FOCUSED_ROUND_BUDGETS, type RoundBudget } from './settings';
import { excludedPrompts, type Verdict, type VerificationLabel } from './verification';

/**
 * A focused round (docs/method.md#focused-rounds): its prompts, its budget, and the prompts
 * verification left out.
 */
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
 * A"), plus bucket 0 prompts; GT errors and uncertain items (`verdicts`) are left out of both, as
 * of every round. `stats` are from the run that scored final answers (phase 2), `buckets` from
 * phase 1. `counts.hardA` and `bucket0Kept` are the prompts kept.
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
  const hardAll = buckets.filter((b) => b.bucket === 'A' && (score.get(b.promptUid) ?? 0) <= maxScore);
  const hardA = hardAll.filter((b) => !excluded.has(b.promptUid)).map((b) => b.promptUid);
  const zero = buckets.filter((b) => b.bucket === '0');
  const keptZero = zero.filter((b) => !excluded.has(b.promptUid)).map((b) => b.promptUid);
  const leftOut = (list: readonly BucketAssignment[]) =>
    list
      .filter((b) => excluded.has(b.promptUid))
      .map((b) => ({ promptUid: b.promptUid, label: excluded.get(b.promptUid)! }));
  const left = [...leftOut(hardAll), ...leftOut(zero)];
  return {
    name: 'focused_round1',
    budget: options.budget ?? { ...FOCUSED_ROUND_BUDGETS.round1 },
    promptUids: [...hardA, ...keptZero],
    excluded: left,
    counts: {
      hardA: hardA.length,
      hardAExcluded: hardAll.length - hardA.length,
      bucket0: zero.length,
      bucket0Excluded: zero.length - keptZero.length,
      bucket0Kept: keptZero.length,
      total: hardA.length + keptZero.length,
    },
  };
}

/**
 * Round 2: prompts of the previous round with mean final score <= 0.3 in that round's own results
 * (`stats`: round 1's rollouts, not phase 2's), minus GT errors and uncertain ones. A prompt round
 * 1 never sampled has no score there and is not carried over.
 */
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

/**
 * Round 3 (docs/method.md#settings-table): round 2's data again, started from the SFT checkpoint distilled from
 * the focused rounds' rare successes, with the largest budget; GT errors and uncertain items found
 * since round 2 was built are left out as well.
 */
export function buildRound3(
  round2: readonly string[],
  verdicts: readonly Verdict[],
  options: { budget?: RoundBudget } = {},
): FocusedRound {
  const excluded = excludedPrompts(verdicts);
  const kept = round2.filter((uid) => !excluded.has(uid));
  return {
    name: 'focused_round3',
    budget: options.budget ?? { ...FOCUSED_ROUND_BUDGETS.round3 },
    promptUids: kept,
    excluded: round2
      .filter((uid) => excluded.has(uid))
      .map((uid) => ({ promptUid: uid, label: excluded.get(uid)! })),
    counts: { previous: round2.length, excluded: round2.length - kept.length, total: kept.length },
  };
}
