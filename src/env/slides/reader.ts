import { hashString } from '../../core/random';
import type { Generator, GeneratorAnswer } from '../../ports/generator';
import type { CallOptions } from '../../ports/common';
import { AbortedError } from '../../core/errors';
import {
  READABLE_FONT_PX,
  type CorpusQuestion,
  type Slide,
  type SlideCorpus,
  type SlideFact,
} from './corpus';
import type { Evidence } from '../../ports/types';

export interface SlideReader extends Generator {
  readonly provider: 'slide-reader';
  /** The facts the reader could read in this evidence (for tests and reports). */
  legibleFacts(evidence: readonly Evidence[]): SlideFact[];
}

/**
 * A frozen reader over the slide corpus, standing in for a vision-language model: it answers a
 * question only from facts legible in the evidence (large print on a retrieved slide; small
 * print only inside a crop that enlarges it to READABLE_FONT_PX), and otherwise answers like a
 * model that guesses: a plausible value of the same kind, deterministic per question, not the
 * right one.
 */
export function createSlideReader(
  corpus: SlideCorpus,
  options: { readableFontPx?: number } = {},
): SlideReader {
  const readable = options.readableFontPx ?? READABLE_FONT_PX;
  const slides = new Map<string, Slide>();
  for (const deck of corpus.decks) for (const slide of deck.slides) slides.set(slide.basename, slide);
  const questions = new Map<string, CorpusQuestion>();
  for (const list of Object.values(corpus.questions)) for (const q of list) questions.set(q.question, q);
  const valuesByAttribute = new Map<string, string[]>();
  for (const slide of slides.values())
    for (const fact of slide.facts)
      valuesByAttribute.set(fact.attribute, [...(valuesByAttribute.get(fact.attribute) ?? []), fact.value]);

  const legibleFacts = (evidence: readonly Evidence[]): SlideFact[] => {
    const out: SlideFact[] = [];
    for (const item of evidence) {
      const slide = slides.get(item.basename);
      if (!slide) continue;
      if (item.kind === 'page') {
        out.push(...slide.facts.filter((f) => f.fontPx >= readable));
        continue;
      }
      const region = item.sourceRegion;
      if (!region) continue;
      const regionSide = Math.max(region[2] - region[0], region[3] - region[1]);
      const shownSide = item.image ? Math.max(item.image.width, item.image.height) : regionSide;
      const scale = shownSide / regionSide;
      for (const fact of slide.facts) {
        const [x1, y1, x2, y2] = fact.box;
        const inside =
          x1 >= region[0] - 2 && y1 >= region[1] - 2 && x2 <= region[2] + 2 && y2 <= region[3] + 2;
        if (inside && fact.fontPx * scale >= readable) out.push(fact);
      }
    }
    return out;
  };

  return {
    specificationVersion: 'v1',
    provider: 'slide-reader',
    legibleFacts,
    async doAnswer(
      question: string,
      evidence: readonly Evidence[],
      callOptions?: CallOptions,
    ): Promise<GeneratorAnswer> {
      if (callOptions?.signal?.aborted)
        throw new AbortedError({ what: 'slide reader', cause: callOptions.signal.reason });
      const asked = questions.get(question.trim());
      if (asked) {
        const fact = legibleFacts(evidence).find((f) => f.id === asked.metadata.factId);
        if (fact) return { answer: fact.value };
        const pool = (valuesByAttribute.get(asked.metadata.attribute) ?? []).filter(
          (v) => v !== asked.reference,
        );
        if (pool.length > 0) return { answer: pool[hashString(question) % pool.length]! };
      }
      return { answer: 'unknown' };
    },
  };
}
