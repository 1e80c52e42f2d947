import type { EpisodeSummary } from './episodes';
import { DEFAULT_CURATION_SETTINGS } from './settings';

/** docs/method.md#ground-truth-verification */
export const VERIFICATION_LABELS = [
  'GT_ERROR',
  'GEN_ERROR',
  'UNCERTAIN',
  'BOTH_WRONG',
  'FORMAT_DIFF',
] as const;
export type VerificationLabel = (typeof VERIFICATION_LABELS)[number];

export type CandidateReason = 'judge_zero_ndcg_high' | 'judge_low_ndcg_high';

export interface VerificationCandidate {
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
    const { judgeScore, ndcg } = episode;
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
  const match = /\b(GT_ERROR|GEN_ERROR|UNCERTAIN|BOTH_WRONG|FORMAT_DIFF)\b/.exec(text.toUpperCase());
  return (match?.[1] as VerificationLabel | undefined) ?? null;
}

export interface Verdict {
  promptUid: string;
  sampleId: string;
  reason: CandidateReason;
  label: VerificationLabel;
  /** What the verifier saw, kept with the exclusion. */
  detail: Record<string, unknown>;
}

/** GT errors and uncertain items leave the next round (docs/method.md#ground-truth-verification). */
export const EXCLUDING_LABELS: ReadonlySet<VerificationLabel> = new Set(['GT_ERROR', 'UNCERTAIN']);

export function excludedPrompts(verdicts: readonly Verdict[]): Map<string, VerificationLabel> {
  return new Map(verdicts.filter((v) => EXCLUDING_LABELS.has(v.label)).map((v) => [v.promptUid, v.label]));
}
