import { acceptedAnswers, isExactMatchAny } from './exact-match';

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

/**
 * Answer mode's success: the answer is an exact match of one of the accepted answers (the
 * record's `answers`, else its reference) after SQuAD's normalisation, the check Search-R1 scores
 * Natural Questions with and its exact-match reward pays (exact-match.ts).
 */
export function isExactMatchSuccess(
  answer: string,
  record: { reference?: string | null | undefined; answers?: readonly string[] | undefined },
): boolean {
  return isExactMatchAny(answer, acceptedAnswers(record));
}
