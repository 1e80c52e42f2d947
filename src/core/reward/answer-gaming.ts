/**
 * Answers that game a string-matching check (docs/method.md#rule-judge): they contain the reference
 * and still do not state it. Shared by the rule judge and the strict Search-R1 answer check, so
 * that both refuse the same classes.
 */
export type AnswerGamingClass = 'negation' | 'alternatives' | 'list' | 'hedge' | 'restated-question';

/**
 * The most an answer of each class can score on the rule judge's [0, 1] scale. A negation says
 * the reference is wrong and alternatives leave the choice to the judge (0); a list of candidates
 * and a hedged answer are worth no more than a guess between two (0.5); a restated question adds
 * nothing to it (0).
 */
export const ANSWER_GAMING_CAPS: Readonly<Record<AnswerGamingClass, number>> = Object.freeze({
  negation: 0,
  alternatives: 0,
  list: 0.5,
  hedge: 0.5,
  'restated-question': 0,
});

/** NFKC, lowercase, thousands separators and punctuation (but decimal points, % and $) removed, articles dropped. */
export function normaliseAnswer(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/(\d),(?=\d{3}\b)/g, '$1')
    .replace(/[^\p{L}\p{N}.%$]+/gu, ' ')
    .replace(/(?<!\d)\.|\.(?!\d)/g, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

const NEGATIONS = new Set([
  'not',
  'no',
  'never',
  'neither',
  'nor',
  'none',
  'nothing',
  'nowhere',
  'cannot',
  'wrong',
  'incorrect',
  'false',
  'untrue',
  'nope',
]);
const DISJUNCTIONS = new Set(['or', 'either', 'whether']);
const HEDGES = new Set([
  'maybe',
  'perhaps',
  'possibly',
  'probably',
  'likely',
  'unlikely',
  'presumably',
  'apparently',
  'might',
  'could',
  'guess',
  'unsure',
  'uncertain',
  'approximately',
  'roughly',
]);
const HEDGE_PAIRS = ['i think', 'i believe', 'may be', 'not sure', 'or so'];
/** Words that carry no candidate of their own in a list item or a restated question. */
const FILLER = new Set([
  'a',
  'an',
  'the',
  'it',
  'its',
  'is',
  'was',
  'are',
  'were',
  'be',
  'been',
  'this',
  'that',
  'these',
  'those',
  'there',
  'what',
  'which',
  'who',
  'whom',
  'whose',
  'when',
  'where',
  'why',
  'how',
  'did',
  'does',
  'do',
  'yes',
  's',
  'answer',
  'so',
  'also',
  'i',
  'my',
  'of',
  'in',
  'on',
  'at',
  'to',
  'for',
  'by',
]);
/** A list item that starts with one of these elaborates on the answer ("Paris, in France"); it is no candidate. */
const ELABORATION_STARTS = new Set([
  'according',
  'in',
  'on',
  'at',
  'from',
  'by',
  'since',
  'as',
  'which',
  'who',
  'that',
  'because',
  'per',
  'with',
  'for',
  'to',
  'of',
  'during',
  'after',
  'before',
  'about',
  'around',
  'near',
  'yes',
  'i',
  'it',
  'its',
  'this',
  'where',
  'when',
]);

const wordsOf = (normalised: string): string[] => (normalised.length === 0 ? [] : normalised.split(' '));

/** "isn't" and "can’t" read as "not" (the apostrophe would otherwise leave "isn t"). */
const expandContractions = (text: string) => text.normalize('NFKC').replace(/n['\u2019]t\b/gi, ' not');

const containsWords = (haystack: readonly string[], needle: readonly string[]): boolean => {
  if (needle.length === 0 || needle.length > haystack.length) return false;
  for (let i = 0; i + needle.length <= haystack.length; i++) {
    let k = 0;
    while (k < needle.length && haystack[i + k] === needle[k]) k++;
    if (k === needle.length) return true;
  }
  return false;
};

const pairsOf = (words: readonly string[]) => words.slice(1).map((w, i) => `${words[i]} ${w}`);

/** Clauses: split at punctuation that ends a phrase (not a decimal point or thousands comma) and at "but". */
function clausesOf(text: string, referenceSet: ReadonlySet<string>): string[][] {
  const kept = text.normalize('NFKC').replace(/(\d),(?=\d{3}\b)/g, '$1');
  return kept
    .split(/[,;:!?()[\]{}\n\r\u2014\u2013&]|(?<!\d)\.|\.(?!\d)/)
    .flatMap((part) => {
      const words = wordsOf(normaliseAnswer(part));
      const out: string[][] = [[]];
      for (const w of words) {
        if ((w === 'but' || w === 'and') && !referenceSet.has(w)) out.push([]);
        else out[out.length - 1]!.push(w);
      }
      return out;
    })
    .filter((c) => c.length > 0);
}

/**
 * The gaming classes an answer falls in, for a reference (and the question, whose words an answer
 * may restate). A marker word the reference itself has ("or" in "Paris or London") is not a
 * marker. Honest answers with more words than the reference ("It was 4.5 billion dollars.",
 * "Paris, not London", "Paris, in France") fall in none.
 */
export function answerGamingClasses(answer: string, reference: string, question = ''): AnswerGamingClass[] {
  const referenceWords = wordsOf(normaliseAnswer(expandContractions(reference)));
  if (referenceWords.length === 0) return [];
  const referenceSet = new Set(referenceWords);
  const questionWords = wordsOf(normaliseAnswer(expandContractions(question)));
  const questionSet = new Set(questionWords);
  const expanded = expandContractions(answer);
  const answerWords = wordsOf(normaliseAnswer(expanded));
  const answerPairs = pairsOf(answerWords);
  const referencePairs = new Set(pairsOf(referenceWords));
  const isMarker = (w: string, markers: ReadonlySet<string>) => markers.has(w) && !referenceSet.has(w);
  const found = new Set<AnswerGamingClass>();
  const clauses = clausesOf(expanded, referenceSet);
  const states = (words: readonly string[]) => containsWords(words, referenceWords);
  const negated = (words: readonly string[]) => words.some((w) => isMarker(w, NEGATIONS));

  // Negation: the clause that states the reference denies it ("not Paris", "Paris is wrong"), a
  // bare denial follows it ("Paris? No."), or the answer denies without stating the reference.
  const stating = clauses.map(states);
  const firstStating = stating.indexOf(true);
  if (firstStating < 0) {
    if (negated(answerWords)) found.add('negation');
  } else if (clauses.some((c, i) => stating[i] && negated(c))) {
    found.add('negation');
  } else {
    const last = clauses[clauses.length - 1]!;
    if (
      clauses.length - 1 > firstStating &&
      negated(last) &&
      last.every((w) => NEGATIONS.has(w) || FILLER.has(w))
    )
      found.add('negation');
  }

  // Alternatives: "or", "either", "whether", or a slash between words.
  if (
    answerWords.some((w) => isMarker(w, DISJUNCTIONS)) ||
    (/\p{L}{2}\s*\/\s*\p{L}{2}/u.test(answer) && !reference.includes('/'))
  )
    found.add('alternatives');

  // A list: besides the item that states the reference, an item that names a candidate of its own.
  if (firstStating >= 0) {
    const candidate = (item: readonly string[]) =>
      !states(item) &&
      !negated(item) &&
      !ELABORATION_STARTS.has(item[0]!) &&
      item.some((w) => !FILLER.has(w) && !referenceSet.has(w) && !questionSet.has(w));
    if (clauses.some(candidate)) found.add('list');
  }

  // Hedges.
  if (
    answerWords.some((w) => isMarker(w, HEDGES) && !questionSet.has(w)) ||
    answerPairs.some((p) => HEDGE_PAIRS.includes(p) && !referencePairs.has(p))
  )
    found.add('hedge');

  // A restated question: the answer's words all come from the question and cover most of it.
  if (
    questionSet.size >= 2 &&
    answerWords.length > referenceWords.length &&
    answerWords.every((w) => questionSet.has(w)) &&
    new Set(answerWords).size >= 0.8 * questionSet.size
  )
    found.add('restated-question');

  return [...found];
}

/** The cap for the answer's gaming classes (1 when it is in none). */
export function answerGamingCap(classes: readonly AnswerGamingClass[]): number {
  return classes.reduce((cap, c) => Math.min(cap, ANSWER_GAMING_CAPS[c]), 1);
}
