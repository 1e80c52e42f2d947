/**
 * What counts as a success in every figure the project prints (issue 39, "honest figures"): the
 * judge's full score, or in answer mode an exact match with the reference. A partial score (the
 * rule judge gives "Omar Ito" for "Dara Ito" 0.8) is reported as the mean judge score beside it,
 * never counted as solved.
 */
export const JUDGE_FULL_SCORE = 1;

/** Whether a judge score is the full score (scores are in [0, 1]; a little below 1 for float noise). */
export function isJudgeSuccess(score: number | null | undefined): boolean {
  return typeof score === 'number' && score >= JUDGE_FULL_SCORE - 1e-9;
}

/** Exact match after lowercasing and collapsing whitespace (SQuAD-style normalisation without the article rule). */
export function isExactMatch(answer: string, reference: string): boolean {
  const normalise = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();
  const a = normalise(answer);
  return a.length > 0 && a === normalise(reference);
}
