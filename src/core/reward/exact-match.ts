// Exact match as Search-R1 scores Natural Questions (its `em_check`), in the core: the evaluation
// of answer-mode runs (bench:search-r1, bench:real-text) and the `exact-match` Search-R1 reward
// (docs/method.md#search-r1-reward) use the same normalisation.

/**
 * SQuAD's answer normalisation, as Natural Questions is scored: lower case, accents and
 * punctuation off, the articles a/an/the dropped, whitespace collapsed. Matching compares whole
 * words of these forms.
 */
export function normaliseForMatch(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * Exact match as Search-R1 scores Natural Questions (its `em_check`): the answer equals one of the
 * reference answers after SQuAD's normalisation (here with accents folded too).
 */
export function isExactMatchAny(answer: string, references: readonly string[]): boolean {
  const a = normaliseForMatch(answer);
  return a !== '' && references.some((r) => normaliseForMatch(r) === a);
}

/**
 * The answers an exact-match check accepts for a question or an episode: its `answers` when it has
 * them (Search-R1's `golden_answers`), else its reference alone, else none.
 */
export function acceptedAnswers(record: {
  reference?: string | null | undefined;
  answers?: readonly string[] | undefined;
}): readonly string[] {
  if (record.answers !== undefined && record.answers.length > 0) return record.answers;
  return typeof record.reference === 'string' ? [record.reference] : [];
}
