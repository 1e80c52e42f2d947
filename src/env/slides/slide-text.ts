import {
  boxToLocationBins,
  LOCATION_BINS,
  LOCATION_TOKENS,
  regionMarkText,
} from '../../core/protocol/location';
import type { BoundingBox } from '../../ports/types';
import {
  READABLE_FONT_PX,
  SLIDE_HEIGHT,
  SLIDE_WIDTH,
  type Slide,
  type SlideCorpus,
  type SlideFact,
} from './corpus';

// What a slide says: the text a search index sees, the text a small text policy perceives, the corpus's words.

/** The text a search index sees for a slide: title and every line, small print and pointer lines included. */
export function slideText(slide: Slide): string {
  return [slide.title, ...slide.facts.flatMap((f) => (f.pointer ? [f.line, f.pointer.line] : [f.line]))].join(
    '\n',
  );
}

/**
 * The bins a page shows for a small-print region: the grid box that covers it, one bin wider on
 * every side (within the page), so that a crop copied one bin off still holds the whole line; the
 * box stays small enough for the crop to make the line legible.
 */
export function regionBins(fact: SlideFact): BoundingBox {
  const [x1, y1, x2, y2] = boxToLocationBins(fact.region ?? fact.box, SLIDE_WIDTH, SLIDE_HEIGHT);
  return [
    Math.max(0, x1 - 1),
    Math.max(0, y1 - 1),
    Math.min(LOCATION_BINS, x2 + 1),
    Math.min(LOCATION_BINS, y2 + 1),
  ];
}

/** The line a page shows for a small-print region: its role and its place in location tokens, not its text. */
export function regionLine(fact: SlideFact): string {
  return regionMarkText(fact.role ?? 'small print', regionBins(fact));
}

/**
 * What a vision model perceives of a slide, as text for a text-only policy
 * (docs/method.md#what-a-text-policy-perceives): the title and the lines printed large enough to
 * read (facts, and the pointer lines that say which region holds each small-print fact), and for
 * each small-print region a marked placeholder with its role and place (location tokens,
 * src/core/protocol/location.ts), in reading order, but not its text: the policy can tell which
 * region a crop should enlarge from the page's pointer line, not from what the region says. The
 * search index still sees every line (`slideText`).
 */
export function perceivedSlideText(slide: Slide, readableFontPx = READABLE_FONT_PX): string {
  const legible = [
    ...slide.facts.filter((f) => f.fontPx >= readableFontPx).map((f) => ({ y: f.box[1], line: f.line })),
    ...slide.facts.flatMap((f) => (f.pointer ? [{ y: f.pointer.box[1], line: f.pointer.line }] : [])),
  ]
    .sort((a, b) => a.y - b.y)
    .map((l) => l.line);
  const small = slide.facts
    .filter((f) => f.fontPx < readableFontPx)
    .sort((a, b) => a.box[1] - b.box[1] || a.box[0] - b.box[0]);
  return [slide.title, ...legible, ...small.map(regionLine)].join('\n');
}

/**
 * Every word of the corpus's slides and questions (letters and digits), every list of numbers in
 * them, and every location token (`<x1_0>` … `<y2_32>`: a region's place, as the policy is shown
 * it and writes a crop), sorted: a tokenizer vocabulary. A box is four location tokens, so that a
 * crop copies the region it chose in four choices, and the vocabulary does not grow with the
 * regions (createVocabularyTokenizer).
 */
export function corpusVocabulary(corpus: SlideCorpus): string[] {
  const words = new Set<string>();
  const add = (raw: string) => {
    const text = raw.replace(/<[xy][12]_\d+>/g, ' ');
    for (const w of text.match(/[\p{L}\p{N}]+/gu) ?? []) words.add(w);
    for (const list of text.match(/(?<![\p{L}\p{N}])\p{N}+(?:, \p{N}+)+(?![\p{L}\p{N}])/gu) ?? [])
      words.add(list);
  };
  for (const deck of corpus.decks)
    for (const slide of deck.slides)
      add(slideText(slide)), add(perceivedSlideText(slide)), add(slide.basename);
  for (const list of Object.values(corpus.questions)) for (const q of list) add(q.question);
  for (const token of LOCATION_TOKENS) words.add(token);
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
