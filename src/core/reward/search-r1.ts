import { answerGamingClasses } from './answer-gaming';
import { isExactMatchAny } from './exact-match';
import { sequenceMatcherRatio } from './sequence-matcher';
import { replaceTagSpans, tagSpans } from '../protocol/tag-spans';

/** The "no relevant content found" answer that Search-R1 rewards with 0.5. */
export const NOT_FOUND_ANSWER = '未找到相关内容';

const count = (text: string, tag: string) => text.split(tag).length - 1;

/**
 * Seed 004's format check on the whole generated text: -1.0 if the structure is wrong, 0.5 if
 * right. `<think>` blocks are removed first; then there must be exactly one `<answer>…</answer>`
 * at the very end, and `<search>`, `</search>`, `<information>`, `</information>` must pair up,
 * each search followed by its information block.
 */
export function checkFormatCorrectness(generatedText: string): number {
  const text = replaceTagSpans(generatedText, '<think>', '</think>', () => '');
  if (count(text, '<answer>') !== 1 || count(text, '</answer>') !== 1) return -1.0;
  const answerOpen = text.indexOf('<answer>');
  const answerClose = text.indexOf('</answer>');
  if (answerClose < answerOpen) return -1.0;
  if (text.slice(answerClose + '</answer>'.length).trim().length > 0) return -1.0;
  const before = text.slice(0, answerOpen);
  const searches = count(before, '<search>');
  if (
    searches !== count(before, '</search>') ||
    searches !== count(before, '<information>') ||
    searches !== count(before, '</information>')
  ) {
    return -1.0;
  }
  // Each <search>…</search> must be followed by <information>…</information> before the next search.
  return searchesAnswered(before) === searches ? 0.5 : -1.0;
}

/**
 * How many `<search>…</search>` are each followed (after whitespace) by `<information>…</information>`,
 * scanning left to right as `/<search>[\s\S]*?<\/search>\s*<information>[\s\S]*?<\/information>/g`
 * would count them when every search is answered; a search that is not stops the count (the regex
 * would then span two searches in one match, so its count falls short too). Linear, where the regex
 * is cubic on a body of many unanswered searches (docs/architecture.md#regular-expressions).
 */
function searchesAnswered(text: string): number {
  let answered = 0;
  let from = 0;
  for (;;) {
    const open = text.indexOf('<search>', from);
    if (open < 0) return answered;
    const close = text.indexOf('</search>', open + '<search>'.length);
    if (close < 0) return answered;
    let at = close + '</search>'.length;
    while (at < text.length && /\s/.test(text[at]!)) at++;
    if (!text.startsWith('<information>', at)) return answered;
    const end = text.indexOf('</information>', at + '<information>'.length);
    if (end < 0) return answered;
    answered++;
    from = end + '</information>'.length;
  }
}

/** Options of Search-R1's reward. */
export interface SearchR1AnswerOptions {
  /**
   * Refuse the answers that game the similarity check (docs/method.md#search-r1-reward): a
   * negation of the reference, alternatives, a list of candidates, a hedge or a restated question
   * scores 0 unless it is the exact reference. Off by default: Seed 004's rule as specified.
   */
  strict?: boolean;
  /** The question, for the restated-question class and for words an answer may repeat from it. */
  question?: string;
}

/**
 * Seed 004's answer check: exact match 2.0; the not-found answer 0.5; difflib ratio >= 0.5 after
 * lowercasing and removing whitespace 1.0; otherwise (or empty) 0. `strict` refuses the gaming
 * classes of the rule judge (`answerGamingClasses`) before the similarity.
 */
export function checkAnswerCorrectness(
  finalAnswer: string,
  groundTruth: string,
  options: SearchR1AnswerOptions = {},
): number {
  const answer = finalAnswer.trim();
  if (answer.length === 0) return 0;
  if (answer === groundTruth.trim()) return 2.0;
  if (answer === NOT_FOUND_ANSWER) return 0.5;
  if (options.strict && answerGamingClasses(answer, groundTruth, options.question).length > 0) return 0;
  const normalise = (s: string) => s.toLowerCase().replace(/\s+/g, '');
  return sequenceMatcherRatio(normalise(answer), normalise(groundTruth)) >= 0.5 ? 1.0 : 0;
}

/** Extracts the text of the last `<answer>…</answer>` (empty if none). */
export function extractAnswer(text: string): string {
  const spans = tagSpans(text, '<answer>', '</answer>');
  return spans.length > 0 ? spans[spans.length - 1]!.body.trim() : '';
}

/**
 * Seed 004's total reward: format + answer, in [-1.0, 2.5]. Given several accepted answers
 * (Search-R1's `golden_answers`), the answer check is the best over them.
 */
export function searchR1Reward(
  generatedText: string,
  groundTruth: string | readonly string[],
  options: SearchR1AnswerOptions = {},
): { format: number; answer: number; total: number } {
  const format = checkFormatCorrectness(generatedText);
  const final = extractAnswer(generatedText);
  const truths = typeof groundTruth === 'string' ? [groundTruth] : groundTruth;
  const answer = Math.max(0, ...truths.map((t) => checkAnswerCorrectness(final, t, options)));
  return { format, answer, total: format + answer };
}

/**
 * Search-R1's outcome reward (its `qa_em.compute_score_em`, format score 0): 1 when the last
 * `<answer>…</answer>` equals the reference, or one of the accepted answers where there are several
 * (its `golden_answers`), after SQuAD's normalisation (`em_check`), else 0, whatever the format. Where the format-and-answer reward pays 1.5 of 2.5 for a similar answer and 0.5 for
 * any well-formed episode, this one pays the exact answer alone.
 */
export function searchR1ExactMatchReward(
  generatedText: string,
  groundTruth: string | readonly string[],
): number {
  return isExactMatchAny(
    extractAnswer(generatedText),
    typeof groundTruth === 'string' ? [groundTruth] : groundTruth,
  )
    ? 1
    : 0;
}
