import { InvalidArgumentError } from '../../core/errors';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import type { PromptRecord } from '../../core/types';
import { ATTRIBUTES, SYLLABLES } from './attributes';
import {
  drawSmallPrintPlaces,
  HELD_OUT_PLACE_SHIFT_PX,
  pointerLine,
  REGION_MARGIN_PX,
  type SmallPrintRole,
  YEAR,
} from './regions';

/** Slide size in pixels (16:9). */
export const SLIDE_WIDTH = 640;
export const SLIDE_HEIGHT = 360;
export const TITLE_FONT_PX = 28;
export const FACT_FONT_PX = 20;
/** Small print: legible to the reader only when a crop enlarges it to READABLE_FONT_PX or more. */
export const SMALL_FONT_PX = 7;
export const READABLE_FONT_PX = 14;
/** Large type (facts and pointers) in up to four rows: baselines 104, 140, 176, 212. */
export const LARGE_ROWS = 4;
const LARGE_BASELINE_PX = 104;
const LARGE_ROW_PX = 36;

export type BoxPx = [number, number, number, number];

export interface SlideFact {
  id: string;
  entity: string;
  attribute: string;
  value: string;
  /** The line as printed. */
  line: string;
  small: boolean;
  fontPx: number;
  /** Where the line is printed, in slide pixels. */
  box: BoxPx;
  /** Small print: the region's role (drawn apart from the attribute) and its box as the policy is told it. */
  role?: SmallPrintRole;
  region?: BoxPx;
  /**
   * Small print: the line in large type that says where the fact is (`Employees 2015: see
   * footnote`) and where it is printed: the page, not the question, tells which region to enlarge.
   */
  pointer?: { line: string; box: BoxPx };
}

export interface Slide {
  deck: string;
  page: number;
  /** `{deck}_{page}.png`: what search returns and NDCG compares. */
  basename: string;
  title: string;
  facts: SlideFact[];
}

export interface Deck {
  id: string;
  entity: string;
  slides: Slide[];
}

export interface CorpusQuestion extends PromptRecord {
  reference: string;
  goldenBasenames: string[];
  /** `query`: the words that find the golden slide (entity, attribute, year when the fact has one). */
  metadata: {
    factId: string;
    entity: string;
    attribute: string;
    query: string;
    small: boolean;
    split: 'train' | 'validation' | 'test';
    /** Where the fact is printed on its golden page (slide pixels): a crop that covers it is the right region. */
    factBox: BoxPx;
    /** Small print: the role of the region that holds it (null: large type, legible on the page). */
    role: SmallPrintRole | null;
  };
}

/** The seeded slide corpus: decks, slides per deck, the share with small print, and the seed. */
export interface SlideCorpusSettings {
  seed: number;
  decks: number;
  minSlides: number;
  maxSlides: number;
  /** Share of slides with small print (one to three regions, each one fact). */
  smallPrintRate: number;
  /** Shares of questions for validation and test (the rest is train). */
  validationShare: number;
  testShare: number;
  /**
   * Small print of the validation and test decks at places no training deck uses (moved right by
   * `HELD_OUT_PLACE_SHIFT_PX`): what a crop written as location tokens must copy. Default false.
   */
  heldOutPlaces: boolean;
}

export const DEFAULT_SLIDE_CORPUS_SETTINGS: Readonly<SlideCorpusSettings> = Object.freeze({
  seed: 1,
  decks: 200,
  minSlides: 5,
  maxSlides: 15,
  smallPrintRate: 0.25,
  validationShare: 0.1,
  testShare: 0.1,
  heldOutPlaces: false,
});

export interface SlideCorpus {
  settings: SlideCorpusSettings;
  decks: Deck[];
  questions: { train: CorpusQuestion[]; validation: CorpusQuestion[]; test: CorpusQuestion[] };
}

/**
 * Advance width of a line in DejaVu Sans, in em, rounded up a little so that the box always
 * holds the drawn text (the reader checks that a crop covers the box).
 */
export function textWidthEm(text: string): number {
  let em = 0;
  for (const ch of text) {
    if (" .,:;'|!".includes(ch)) em += 0.34;
    else if ('ijlft'.includes(ch)) em += 0.42;
    else if ('r'.includes(ch)) em += 0.45;
    else if ('mwMW'.includes(ch)) em += 1.02;
    else if (/[A-Z]/.test(ch)) em += 0.8;
    else if (/[0-9]/.test(ch)) em += 0.66;
    else em += 0.66;
  }
  return em * 1.03;
}

function checkSettings(s: SlideCorpusSettings): void {
  const ints = ['decks', 'minSlides', 'maxSlides'] as const;
  for (const key of ints)
    if (!(Number.isInteger(s[key]) && s[key] > 0))
      throw new InvalidArgumentError({
        argument: `corpus.${key}`,
        message: `must be a positive integer, got ${String(s[key])}`,
      });
  if (s.maxSlides < s.minSlides)
    throw new InvalidArgumentError({
      argument: 'corpus.maxSlides',
      message: `must be >= minSlides (${s.minSlides})`,
    });
  for (const key of ['smallPrintRate', 'validationShare', 'testShare'] as const) {
    if (!(s[key] >= 0 && s[key] <= 1))
      throw new InvalidArgumentError({
        argument: `corpus.${key}`,
        message: `must be in [0, 1], got ${String(s[key])}`,
      });
  }
  if (s.validationShare + s.testShare >= 1)
    throw new InvalidArgumentError({
      argument: 'corpus.testShare',
      message: 'validationShare + testShare must leave questions for training',
    });
  if (typeof s.heldOutPlaces !== 'boolean')
    throw new InvalidArgumentError({
      argument: 'corpus.heldOutPlaces',
      message: `must be true or false, got ${String(s.heldOutPlaces)}`,
    });
  if (!Number.isInteger(s.seed))
    throw new InvalidArgumentError({
      argument: 'corpus.seed',
      message: `must be an integer, got ${String(s.seed)}`,
    });
}

/**
 * A seeded slide-deck corpus: each deck is about one invented organisation; each slide has a
 * title and up to three facts in large type, and on some slides one to three small-print regions
 * (src/env/slides/regions.ts) at varied places and sizes, each with a role (source, footnote,
 * contact line) drawn apart from the one fact it holds (any role holds any attribute), and a pointer
 * line in large type naming the role (`Employees 2015: see footnote`). Every fact is the answer to
 * one question whose golden page is its slide. The same settings give the same corpus on every
 * machine.
 */
export function generateSlideCorpus(partial: Partial<SlideCorpusSettings> = {}): SlideCorpus {
  const settings = { ...DEFAULT_SLIDE_CORPUS_SETTINGS, ...partial };
  checkSettings(settings);
  const random = createRandom(settings.seed, RANDOM_STREAMS.slideCorpus);
  const names = new Set<string>();
  const decks: Deck[] = [];
  const questions: CorpusQuestion[] = [];
  for (let d = 0; d < settings.decks; d++) {
    let entity = '';
    while (entity === '' || names.has(entity)) {
      const parts = 2 + random.nextInt(2);
      const word = Array.from({ length: parts }, () => SYLLABLES[random.nextInt(SYLLABLES.length)]!).join('');
      entity = word[0]!.toUpperCase() + word.slice(1);
    }
    names.add(entity);
    const id = entity.toLowerCase();
    const slideCount = settings.minSlides + random.nextInt(settings.maxSlides - settings.minSlides + 1);
    const slides: Slide[] = [];
    const used = new Set<string>();
    for (let p = 1; p <= slideCount; p++) {
      const kind = ATTRIBUTES[(d + p) % ATTRIBUTES.length]!;
      const basename = `${id}_${p}.png`;
      const facts: SlideFact[] = [];
      const places =
        random.nextFloat() < settings.smallPrintRate
          ? drawSmallPrintPlaces(random, 1 + random.nextInt(3))
          : [];
      // Large rows hold the facts in large type and one pointer line per small-print region.
      const lines = 1 + random.nextInt(Math.min(3, LARGE_ROWS - places.length));
      let title = kind;
      let row = 0;
      const largeBox = (text: string): BoxPx => {
        const y = LARGE_BASELINE_PX + LARGE_ROW_PX * row++;
        const width = Math.ceil(textWidthEm(text) * FACT_FONT_PX);
        return [
          40,
          y - FACT_FONT_PX,
          Math.min(SLIDE_WIDTH - 8, 40 + width),
          y + Math.ceil(FACT_FONT_PX * 0.3),
        ];
      };
      for (let k = 0; k < lines + places.length; k++) {
        const place = k >= lines ? places[k - lines]! : null;
        // Small print holds an attribute that no other line of the slide shows, whatever its
        // region's role (drawn apart): the question does not tell the role, the page's pointer line does.
        const allowed = place
          ? ATTRIBUTES.filter((a) => !facts.some((f) => f.attribute === a.attribute))
          : ATTRIBUTES;
        if (allowed.length === 0) continue;
        // One question per distinct question text in a deck (a repeated one would be ambiguous):
        // draw again, a bounded number of times, rather than leave the line out.
        let attr = k === 0 ? kind : allowed[random.nextInt(allowed.length)]!;
        let made = attr.make(random, entity);
        for (let tries = 0; used.has(made.question) && tries < 20; tries++) {
          attr = allowed[random.nextInt(allowed.length)]!;
          made = attr.make(random, entity);
        }
        if (used.has(made.question)) continue;
        if (k === 0) title = attr;
        used.add(made.question);
        let box: BoxPx;
        let pointer: SlideFact['pointer'];
        if (place) {
          const width = Math.ceil(textWidthEm(made.line) * place.fontPx);
          const y = place.baseline;
          box = [
            place.x,
            y - place.fontPx,
            Math.min(SLIDE_WIDTH - 8, place.x + width),
            y + Math.ceil(place.fontPx * 0.3),
          ];
          const line = pointerLine(made.line, place.role);
          pointer = { line, box: largeBox(line) };
        } else {
          box = largeBox(made.line);
        }
        const fact: SlideFact = {
          id: `${id}_${p}_${k}`,
          entity,
          attribute: attr.attribute,
          value: made.value,
          line: made.line,
          small: place !== null,
          fontPx: place ? place.fontPx : FACT_FONT_PX,
          box,
          ...(place && {
            role: place.role,
            region: [
              box[0] - REGION_MARGIN_PX,
              box[1] - REGION_MARGIN_PX,
              box[2] + REGION_MARGIN_PX,
              box[3] + REGION_MARGIN_PX,
            ] as BoxPx,
            pointer,
          }),
        };
        facts.push(fact);
        questions.push({
          uid: fact.id,
          question: made.question,
          reference: made.value,
          goldenBasenames: [basename],
          metadata: {
            factId: fact.id,
            entity,
            attribute: attr.attribute,
            query: [entity, attr.attribute, YEAR.exec(made.question)?.[0]].filter(Boolean).join(' '),
            small: place !== null,
            split: 'train',
            factBox: box,
            role: place ? place.role : null,
          },
        });
      }
      slides.push({ deck: id, page: p, basename, title: title.slideTitle(entity), facts });
    }
    decks.push({ id, entity, slides });
  }
  // Seeded split by deck: a deck is one organisation and its pages, so no validation or test
  // question's entity or golden page is used by a training question (held out by page and entity,
  // docs/train.md#splits). Decks are taken in a seeded order until each held-out split has its
  // share of the questions.
  const byDeck = new Map<string, CorpusQuestion[]>();
  for (const q of questions) {
    const deck = q.goldenBasenames[0]!.replace(/_\d+\.png$/, '');
    const list = byDeck.get(deck) ?? [];
    list.push(q);
    byDeck.set(deck, list);
  }
  const deckIds = [...byDeck.keys()];
  for (let i = deckIds.length - 1; i > 0; i--) {
    const j = random.nextInt(i + 1);
    [deckIds[i], deckIds[j]] = [deckIds[j]!, deckIds[i]!];
  }
  const nTest = Math.round(questions.length * settings.testShare);
  const nValidation = Math.round(questions.length * settings.validationShare);
  const split: SlideCorpus['questions'] = { train: [], validation: [], test: [] };
  deckIds.forEach((deck, rank) => {
    // The last deck trains when no other did (a corpus of very few decks).
    const which =
      rank === deckIds.length - 1 && split.train.length === 0
        ? 'train'
        : split.test.length < nTest
          ? 'test'
          : split.validation.length < nValidation
            ? 'validation'
            : 'train';
    for (const q of byDeck.get(deck)!) {
      q.metadata.split = which;
      split[which].push(q);
    }
  });
  for (const list of Object.values(split)) list.sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
  if (settings.heldOutPlaces) moveHeldOutSmallPrint(decks, split);
  return { settings, decks, questions: split };
}

/**
 * Moves the small print of the held-out decks' slides `HELD_OUT_PLACE_SHIFT_PX` to the right (its
 * line, region and the question's `factBox`; a line that would then leave the slide would stay
 * where it is, which no line of the default corpus does): the places a corpus made with
 * `heldOutPlaces` holds out.
 */
function moveHeldOutSmallPrint(decks: readonly Deck[], split: SlideCorpus['questions']): void {
  const heldOut = new Set(
    [...split.validation, ...split.test].map((q) => q.goldenBasenames[0]!.replace(/_\d+\.png$/, '')),
  );
  const questionOf = new Map([...split.validation, ...split.test].map((q) => [q.uid, q]));
  const shift = HELD_OUT_PLACE_SHIFT_PX;
  for (const deck of decks) {
    if (!heldOut.has(deck.id)) continue;
    for (const fact of deck.slides.flatMap((s) => s.facts)) {
      if (!fact.small || !fact.region) continue;
      const width = Math.ceil(textWidthEm(fact.line) * fact.fontPx);
      if (fact.box[0] + shift + width > SLIDE_WIDTH - 8) continue;
      const box: BoxPx = [fact.box[0] + shift, fact.box[1], fact.box[2] + shift, fact.box[3]];
      fact.box = box;
      fact.region = [fact.region[0] + shift, fact.region[1], fact.region[2] + shift, fact.region[3]];
      const question = questionOf.get(fact.id);
      if (question) question.metadata.factBox = box;
    }
  }
}
