import type { BucketAssignment } from './buckets';
import { answerScoreOf, type EpisodeSummary } from './episodes';
import { DEFAULT_CURATION_SETTINGS } from './settings';

/**
 * docs/method.md#ground-truth-verification. `GT_OK` is the review of a bucket-0 prompt that passed:
 * the Generator, given the golden page, answers the reference.
 */
export const VERIFICATION_LABELS = [
  'GT_ERROR',
  'GEN_ERROR',
  'UNCERTAIN',
  'BOTH_WRONG',
  'FORMAT_DIFF',
  'GT_OK',
] as const;
/** A verdict of ground-truth verification (`VERIFICATION_LABELS`). */
export type VerificationLabel = (typeof VERIFICATION_LABELS)[number];

/**
 * Why a prompt is verified: a rollout found the evidence but was judged wrong (the two bands), or
 * the prompt is in bucket 0, where no rollout finds the golden page and a wrong golden page or
 * reference would never show up as a rollout candidate (docs/method.md#ground-truth-verification: bucket 0 is reviewed itself).
 */
export type CandidateReason = 'judge_zero_ndcg_high' | 'judge_low_ndcg_high' | 'bucket0_review';

/** A rollout (or a bucket-0 prompt) to verify, and why. */
export interface VerificationCandidate {
  /** The rollout that was judged wrong; for a bucket-0 review, a rollout of the prompt (its question, reference and golden pages; its answer is not used). */
  episode: EpisodeSummary;
  reason: CandidateReason;
}

/**
 * Rollouts that found the evidence but were judged wrong: judge 0 with NDCG >= 0.5, or
 * 0 < judge <= 0.3 with NDCG >= 0.5. One candidate per prompt (the highest-NDCG rollout), since
 * the reference is what is checked.
 */
export function verificationCandidates(
  episodes: readonly EpisodeSummary[],
  settings: { candidateNdcg: number; candidateJudgeHigh: number } = DEFAULT_CURATION_SETTINGS,
): VerificationCandidate[] {
  const best = new Map<string, VerificationCandidate>();
  for (const episode of episodes) {
    const { ndcg } = episode;
    const judgeScore = answerScoreOf(episode);
    if (judgeScore === null || ndcg === null || ndcg < settings.candidateNdcg) continue;
    const reason: CandidateReason | null =
      judgeScore === 0
        ? 'judge_zero_ndcg_high'
        : judgeScore <= settings.candidateJudgeHigh
          ? 'judge_low_ndcg_high'
          : null;
    if (reason === null) continue;
    const held = best.get(episode.promptUid);
    if (!held || (episode.ndcg ?? 0) > (held.episode.ndcg ?? 0))
      best.set(episode.promptUid, { episode, reason });
  }
  return [...best.values()];
}

/**
 * Every bucket-0 prompt (docs/method.md#ground-truth-verification), one candidate each: the
 * highest-NDCG rollout of `episodes` (the bucketing phase's) carries its question, reference and
 * golden pages. A prompt with no rollout in `episodes` is left out.
 */
export function bucketZeroCandidates(
  buckets: readonly BucketAssignment[],
  episodes: readonly EpisodeSummary[],
): VerificationCandidate[] {
  const zero = new Set(buckets.filter((b) => b.bucket === '0').map((b) => b.promptUid));
  const best = new Map<string, EpisodeSummary>();
  for (const episode of episodes) {
    if (!zero.has(episode.promptUid)) continue;
    const held = best.get(episode.promptUid);
    if (!held || (episode.ndcg ?? 0) > (held.ndcg ?? 0)) best.set(episode.promptUid, episode);
  }
  return [...best.values()].map((episode) => ({ episode, reason: 'bucket0_review' as const }));
}

/**
 * Labels a bucket-0 review from the judge's score of the Generator's golden-page answer against
 * the reference: the page supports the reference (>= 0.7): GT_OK; it cannot give the reference
 * (<= 0.3): the ground truth is suspect, GT_ERROR (a wrong golden page or a wrong reference); in
 * between, or no score: UNCERTAIN.
 */
export function labelGoldenReview(goldenScore: number | null): VerificationLabel {
  if (goldenScore === null) return 'UNCERTAIN';
  if (goldenScore >= 0.7) return 'GT_OK';
  if (goldenScore <= 0.3) return 'GT_ERROR';
  return 'UNCERTAIN';
}

/**
 * Labels a candidate from the verifier's evidence: `goldenAnswer` is the Generator's answer given
 * the golden page(s); `goldenScore` the judge's score of that answer against the reference;
 * `rolloutVsGolden` the judge's score of the rollout's answer against the golden-page answer.
 * - the golden page supports an answer the reference rejects, and the rollout agrees with it: GT_ERROR;
 * - the golden-page answer matches the reference: the rollout's generator failed on good evidence
 *   (GEN_ERROR), unless its answer is the same in another form (judge > 0 and agrees: FORMAT_DIFF);
 * - the golden-page answer disagrees with both: BOTH_WRONG; anything in between: UNCERTAIN.
 */
export function labelCandidate(evidence: {
  goldenScore: number | null;
  rolloutVsGolden: number | null;
  rolloutJudge: number;
}): VerificationLabel {
  const { goldenScore, rolloutVsGolden, rolloutJudge } = evidence;
  if (goldenScore === null || rolloutVsGolden === null) return 'UNCERTAIN';
  if (goldenScore >= 0.7) return rolloutJudge > 0 && rolloutVsGolden >= 0.7 ? 'FORMAT_DIFF' : 'GEN_ERROR';
  if (goldenScore <= 0.3) return rolloutVsGolden >= 0.7 ? 'GT_ERROR' : 'BOTH_WRONG';
  return 'UNCERTAIN';
}

/** A verifier's label read from free text (a judge's raw output or a human note): the first label named. */
export function parseVerificationLabel(text: string): VerificationLabel | null {
  const match = /\b(GT_ERROR|GEN_ERROR|UNCERTAIN|BOTH_WRONG|FORMAT_DIFF|GT_OK)\b/.exec(text.toUpperCase());
  return (match?.[1] as VerificationLabel | undefined) ?? null;
}

/** One verification's label for a prompt, with what the verifier saw. */
export interface Verdict {
  promptUid: string;
  sampleId: string;
  reason: CandidateReason;
  label: VerificationLabel;
  /** What the verifier saw, kept with the exclusion. */
  detail: Record<string, unknown>;
}

/** GT errors and uncertain items leave every round (docs/method.md#ground-truth-verification). */
export const EXCLUDING_LABELS: ReadonlySet<VerificationLabel> = new Set(['GT_ERROR', 'UNCERTAIN']);

/** The prompts verification excludes, each with the label that excluded it (GT_ERROR before UNCERTAIN when a prompt has both). */
export function excludedPrompts(verdicts: readonly Verdict[]): Map<string, VerificationLabel> {
  const out = new Map<string, VerificationLabel>();
  for (const v of verdicts)
    if (EXCLUDING_LABELS.has(v.label) && out.get(v.promptUid) !== 'GT_ERROR') out.set(v.promptUid, v.label);
  return out;
}
