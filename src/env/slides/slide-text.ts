import { SLIDE_HEIGHT, READABLE_FONT_PX, type Slide, type SlideCorpus } from './corpus';

// What a slide says: the text a search index sees, the text a small text policy perceives, the corpus's words.

/** The text a search index sees for a slide: title and every line, small print included. */
export function slideText(slide: Slide): string {
  return [slide.title, ...slide.facts.map((f) => f.line)].join('\n');
}

/**
 * Where a slide's small print sits, in slide pixels: the band at the bottom left that holds every
 * small-print line, narrow enough that the default crop enlargement (longer side 768) makes 7 px
 * type at least 14 px.
 */
export const SMALL_PRINT_BOX: readonly [number, number, number, number] = [
  36,
  SLIDE_HEIGHT - 34,
  300,
  SLIDE_HEIGHT - 10,
];

/**
 * What a vision model perceives of a slide, as text for a text-only policy
 * (docs/method.md#what-a-text-policy-perceives): the title and the lines printed large enough to
 * read, and in place of small print a marked placeholder with its place on the slide, so that the
 * policy can tell that a crop would reveal more. The search index still sees every line
 * (`slideText`).
 */
export function perceivedSlideText(slide: Slide, readableFontPx = READABLE_FONT_PX): string {
  const legible = slide.facts.filter((f) => f.fontPx >= readableFontPx).map((f) => f.line);
  const small = slide.facts.filter((f) => f.fontPx < readableFontPx);
  if (small.length === 0) return [slide.title, ...legible].join('\n');
  const [x1, y1, x2, y2] = SMALL_PRINT_BOX;
  const inside = small.every((f) => f.box[0] >= x1 && f.box[1] >= y1 && f.box[2] <= x2 && f.box[3] <= y2);
  const box = inside
    ? SMALL_PRINT_BOX
    : [
        Math.min(...small.map((f) => f.box[0])) - 4,
        Math.min(...small.map((f) => f.box[1])) - 4,
        Math.max(...small.map((f) => f.box[2])) + 4,
        Math.max(...small.map((f) => f.box[3])) + 4,
      ];
  return [slide.title, ...legible, `[small print at ${box.join(', ')}]`].join('\n');
}

/**
 * Every word of the corpus's slides and questions (letters and digits), and every list of numbers
 * in them (a small-print region's coordinates, as the policy is shown them), sorted: a tokenizer vocabulary. A
 * coordinate list is one token, so that a crop copies the region in one choice
 * (createVocabularyTokenizer).
 */
export function corpusVocabulary(corpus: SlideCorpus): string[] {
  const words = new Set<string>();
  const add = (text: string) => {
    for (const w of text.match(/[\p{L}\p{N}]+/gu) ?? []) words.add(w);
    for (const list of text.match(/(?<![\p{L}\p{N}])\p{N}+(?:, \p{N}+)+(?![\p{L}\p{N}])/gu) ?? [])
      words.add(list);
  };
  for (const deck of corpus.decks)
    for (const slide of deck.slides)
      add(slideText(slide)), add(perceivedSlideText(slide)), add(slide.basename);
  for (const list of Object.values(corpus.questions)) for (const q of list) add(q.question);
  for (const w of [
    'Question',
    'page',
    'crop',
    'of',
    'region',
    'png',
    'true',
    'no',
    'results',
    'for',
    'Try',
    'a',
    'different',
    'query',
  ])
    words.add(w);
  return [...words].sort();
}
