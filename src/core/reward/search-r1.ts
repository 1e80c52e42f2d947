import { sequenceMatcherRatio } from './sequence-matcher';

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
  const text = generatedText.replace(/<think>[\s\S]*?<\/think>/g, '');
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
  const blocks = [...before.matchAll(/<search>([\s\S]*?)<\/search>\s*<information>[\s\S]*?<\/information>/g)];
  if (blocks.length !== searches) return -1.0;
  return 0.5;
}

/**
 * Seed 004's answer check: exact match 2.0; the not-found answer 0.5; difflib ratio >= 0.5 after
 * lowercasing and removing whitespace 1.0; otherwise (or empty) 0.
 */
export function checkAnswerCorrectness(finalAnswer: string, groundTruth: string): number {
  const answer = finalAnswer.trim();
  if (answer.length === 0) return 0;
  if (answer === groundTruth.trim()) return 2.0;
  if (answer === NOT_FOUND_ANSWER) return 0.5;
  const normalise = (s: string) => s.toLowerCase().replace(/\s+/g, '');
  return sequenceMatcherRatio(normalise(answer), normalise(groundTruth)) >= 0.5 ? 1.0 : 0;
}

/** Extracts the text of the last `<answer>…</answer>` (empty if none). */
export function extractAnswer(text: string): string {
  const matches = [...text.matchAll(/<answer>([\s\S]*?)<\/answer>/g)];
  return matches.length > 0 ? matches[matches.length - 1]![1]!.trim() : '';
}

/** Seed 004's total reward: format + answer, in [-1.0, 2.5]. */
export function searchR1Reward(
  generatedText: string,
  groundTruth: string,
): { format: number; answer: number; total: number } {
  const format = checkFormatCorrectness(generatedText);
  const answer = checkAnswerCorrectness(extractAnswer(generatedText), groundTruth);
  return { format, answer, total: format + answer };
}
