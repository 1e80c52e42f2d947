/** VQAv2 answer normalisation (lower case, punctuation and articles dropped, number words as digits). */
const NUMBERS: Record<string, string> = {
  none: '0',
  zero: '0',
  one: '1',
  two: '2',
  three: '3',
  four: '4',
  five: '5',
  six: '6',
  seven: '7',
  eight: '8',
  nine: '9',
  ten: '10',
};
const ARTICLES = new Set(['a', 'an', 'the']);

/** An answer as VQAv2's evaluation compares it: lower case, punctuation and articles removed. */
export function normaliseVqaAnswer(answer: string): string {
  return answer
    .toLowerCase()
    .replace(/[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g, ' ')
    .split(/\s+/)
    .filter((w) => w.length > 0 && !ARTICLES.has(w))
    .map((w) => NUMBERS[w] ?? w)
    .join(' ');
}

/**
 * VQAv2 soft accuracy (docs/method.md#candidate-pools): min(1, matches / 3) averaged over the
 * leave-one-out subsets of the human answers. With ten answers, 1 match gives 0.3, 2 give 0.6,
 * 3 or more give 1.0 (3 matches: 0.9 of the subsets still hold 3). No human answers: 0.
 */
export function vqaSoftAccuracy(prediction: string, humanAnswers: readonly string[]): number {
  if (humanAnswers.length === 0) return 0;
  const predicted = normaliseVqaAnswer(prediction);
  const matches = humanAnswers.map((a) => normaliseVqaAnswer(a) === predicted);
  const total = matches.filter(Boolean).length;
  if (humanAnswers.length === 1) return total > 0 ? 1 : 0;
  let sum = 0;
  for (const left of matches) sum += Math.min(1, (total - (left ? 1 : 0)) / 3);
  return Math.round((sum / humanAnswers.length) * 1e6) / 1e6;
}

/** Correct means accuracy > 0 (docs/method.md#candidate-pools). */
export function isVqaCorrect(accuracy: number): 0 | 1 {
  return accuracy > 0 ? 1 : 0;
}
