import { describe, expect, it } from 'vitest';
import { locationBinsText, locationBinsToBox } from '../../core/protocol/location';
import type { Evidence } from '../../ports/types';
import { generateSlideCorpus, READABLE_FONT_PX, SLIDE_HEIGHT, SLIDE_WIDTH, type SlideFact } from './corpus';
import { createOracleScript } from './oracle';
import { createSlideReader } from './reader';
import { pointedRole, SMALL_PRINT_ROLE_NAMES, SMALL_PRINT_SIZES_PX } from './regions';
import { corpusVocabulary, perceivedSlideText, regionBins, regionLine } from './slide-text';

const corpus = generateSlideCorpus({ seed: 11, decks: 60, smallPrintRate: 0.8 });
const slides = corpus.decks.flatMap((d) => d.slides);
const smallOf = (facts: SlideFact[]) => facts.filter((f) => f.small);
const overlap = (a: readonly number[], b: readonly number[]) =>
  a[0]! < b[2]! && b[0]! < a[2]! && a[1]! < b[3]! && b[1]! < a[3]!;

/** What the crop of a region's location tokens shows the reader: the grid box, enlarged as the environment's crops are (longer side 768). */
function cropOf(basename: string, fact: SlideFact, bins = regionBins(fact)): Evidence {
  const region = locationBinsToBox(bins, SLIDE_WIDTH, SLIDE_HEIGHT);
  const w = region[2] - region[0];
  const h = region[3] - region[1];
  const scale = 768 / Math.max(w, h);
  const image = {
    bytes: new Uint8Array(0),
    width: Math.round(w * scale),
    height: Math.round(h * scale),
    mimeType: 'image/png',
  };
  return { kind: 'crop', basename, sourceRegion: region, image };
}

describe('small-print regions to choose', () => {
  it('are the same for the same seed and differ for another', () => {
    expect(generateSlideCorpus({ seed: 11, decks: 60, smallPrintRate: 0.8 })).toEqual(corpus);
    const other = generateSlideCorpus({ seed: 12, decks: 60, smallPrintRate: 0.8 });
    const regions = (c: typeof corpus) =>
      c.decks.flatMap((d) => d.slides.flatMap((s) => smallOf(s.facts).map((f) => f.region)));
    expect(regions(other)).not.toEqual(regions(corpus));
  });

  it('with heldOutPlaces, sit on the held-out decks where no training region starts, the rest of the corpus unchanged', async () => {
    const moved = generateSlideCorpus({ seed: 11, decks: 60, smallPrintRate: 0.8, heldOutPlaces: true });
    const heldOut = new Set(
      [...moved.questions.validation, ...moved.questions.test].map(
        (q) => q.goldenBasenames[0]!.split('_')[0],
      ),
    );
    const startBins = (decks: typeof moved.decks, held: boolean) =>
      new Set(
        decks
          .filter((d) => heldOut.has(d.id) === held)
          .flatMap((d) => d.slides.flatMap((s) => smallOf(s.facts).map((f) => regionBins(f)[0]))),
      );
    const train = startBins(moved.decks, false);
    const held = startBins(moved.decks, true);
    expect(held.size).toBeGreaterThan(0);
    expect([...held].filter((b) => train.has(b))).toEqual([]);
    // The same questions, pages and training slides; held-out small print 64 px to the right, still
    // legible through a crop of its own region, its question's factBox moved with it.
    expect(moved.decks.filter((d) => !heldOut.has(d.id))).toEqual(
      corpus.decks.filter((d) => !heldOut.has(d.id)),
    );
    const reader = createSlideReader(moved);
    for (const q of moved.questions.test.filter((q) => q.metadata.small)) {
      const [, deck, page] = /^(.+)_(\d+)\.png$/.exec(q.goldenBasenames[0]!)!;
      const slide = moved.decks.find((d) => d.id === deck)!.slides[Number(page) - 1]!;
      const fact = slide.facts.find((f) => f.id === q.uid)!;
      const before = corpus.decks
        .find((d) => d.id === deck)!
        .slides[Number(page) - 1]!.facts.find((f) => f.id === q.uid)!;
      expect(fact.box[0] - before.box[0]).toBe(64);
      expect(q.metadata.factBox).toEqual(fact.box);
      expect(fact.box[2]).toBeLessThanOrEqual(SLIDE_WIDTH - 8);
      expect((await reader.doAnswer(q.question, [cropOf(slide.basename, fact)])).answer).toBe(fact.value);
    }
    expect(() => generateSlideCorpus({ heldOutPlaces: 'yes' as unknown as boolean })).toThrow(
      /corpus\.heldOutPlaces/,
    );
  });

  it('come one to three a slide, distinct roles, apart, at varied places and sizes, any role holding any attribute', () => {
    const counts = new Set<number>();
    const places = new Set<string>();
    const sizes = new Set<number>();
    const pairs = new Set<string>();
    for (const slide of slides) {
      const small = smallOf(slide.facts);
      counts.add(small.length);
      expect(new Set(small.map((f) => f.role)).size).toBe(small.length);
      // Large rows: the facts in large type and one pointer line per region, never overlapping.
      const rows = [
        ...slide.facts.filter((f) => !f.small).map((f) => f.box),
        ...small.map((f) => f.pointer!.box),
      ];
      expect(rows.length).toBeLessThanOrEqual(4);
      for (const [i, a] of rows.entries())
        for (const b of rows.slice(i + 1)) expect(overlap(a, b)).toBe(false);
      for (const [i, fact] of small.entries()) {
        expect(fact.role).toBeDefined();
        pairs.add(`${fact.role}|${fact.attribute}`);
        // The asked attribute is in no other line of the slide.
        expect(slide.facts.some((f) => f !== fact && f.attribute === fact.attribute)).toBe(false);
        expect(fact.pointer!.line).toBe(
          `${fact.line.slice(0, fact.line.lastIndexOf(': '))}: see ${fact.role}`,
        );
        const region = fact.region!;
        expect(region[0] <= fact.box[0] && region[1] <= fact.box[1]).toBe(true);
        expect(region[2] >= fact.box[2] && region[3] >= fact.box[3]).toBe(true);
        expect(fact.fontPx).toBeLessThan(READABLE_FONT_PX);
        for (const other of [...small.slice(i + 1), ...slide.facts.filter((f) => !f.small)])
          expect(overlap(region, other.box)).toBe(false);
        places.add(region.join(','));
        sizes.add(fact.fontPx);
      }
    }
    expect([...counts].sort()).toEqual([0, 1, 2, 3]);
    // Every role holds every attribute somewhere: the question's template does not tell the role.
    expect(pairs.size).toBe(SMALL_PRINT_ROLE_NAMES.length * 6);
    expect(places.size).toBeGreaterThan(100);
    expect([...sizes].sort()).toEqual([...SMALL_PRINT_SIZES_PX]);
  });

  it("show the policy each region's role and place in location tokens and its pointer line, never its text", () => {
    const questions = new Map(
      Object.values(corpus.questions)
        .flat()
        .map((q) => [q.metadata.factId, q]),
    );
    for (const slide of slides) {
      const shown = perceivedSlideText(slide);
      for (const fact of slide.facts) {
        const question = questions.get(fact.id)!.question;
        if (!fact.small) {
          expect(shown).toContain(fact.line);
          continue;
        }
        expect(shown).not.toContain(fact.line);
        expect(shown).not.toContain(fact.value);
        expect(shown).toContain(regionLine(fact));
        expect(shown.split('\n')).toContain(fact.pointer!.line);
        // The keyword rule reads the role off the page's pointer line, not off the question.
        expect(pointedRole(question, shown)).toBe(fact.role);
        expect(regionLine(fact)).toMatch(
          new RegExp(`^\\[${fact.role} at <x1_\\d+><y1_\\d+><x2_\\d+><y2_\\d+>\\]$`),
        );
      }
    }
    // One vocabulary for every region: the location tokens, not one entry per region.
    const vocabulary = corpusVocabulary(corpus);
    expect(vocabulary.filter((w) => /^<[xy][12]_\d+>$/.test(w))).toHaveLength(4 * 33);
    expect(vocabulary.some((w) => w.includes(', '))).toBe(false);
  });

  it("let the reader read a region's fact through a crop of its own tokens, and no other region's", async () => {
    const reader = createSlideReader(corpus);
    const questions = new Map(
      Object.values(corpus.questions)
        .flat()
        .map((q) => [q.metadata.factId, q]),
    );
    let checked = 0;
    for (const slide of slides.filter((s) => smallOf(s.facts).length >= 2)) {
      for (const fact of smallOf(slide.facts)) {
        const question = questions.get(fact.id)!;
        expect((await reader.doAnswer(question.question, [cropOf(slide.basename, fact)])).answer).toBe(
          fact.value,
        );
        for (const other of smallOf(slide.facts).filter((f) => f !== fact))
          expect((await reader.doAnswer(question.question, [cropOf(slide.basename, other)])).answer).not.toBe(
            fact.value,
          );
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(30);
  });

  it('make the oracle crop the region of the asked role, and never a page that shows the fact', () => {
    const script = createOracleScript(corpus);
    const byLocation = createOracleScript(corpus, { cropBy: 'location' });
    let cropped = 0;
    for (const slide of slides.filter((s) => smallOf(s.facts).length >= 2)) {
      const shown = `[page ${slide.basename} (640x360)]\n${perceivedSlideText(slide)}`;
      for (const fact of slide.facts) {
        const question = Object.values(corpus.questions)
          .flat()
          .find((q) => q.metadata.factId === fact.id)!;
        const context = `Question: ${question.question}\n<search>${question.metadata.query}</search><information>${shown}</information>`;
        const turn = script({ turn: 1, context, rolloutId: 0 } as Parameters<typeof script>[0]);
        if (fact.small) {
          // By the name the page marks the region with, or by copying its four location tokens.
          expect(turn).toBe(`<bbox>${fact.role}</bbox>`);
          expect(byLocation({ turn: 1, context, rolloutId: 0 } as Parameters<typeof script>[0])).toBe(
            `<bbox>${locationBinsText(regionBins(fact))}</bbox>`,
          );
          cropped++;
        } else expect(turn).toBe('<search_complete>true</search_complete>');
      }
    }
    expect(cropped).toBeGreaterThan(30);
  });

  it("make the oracle search again on any page but the fact's own that marks a region of the asked role", () => {
    const script = createOracleScript(corpus);
    const all = corpus.decks.flatMap((d) => d.slides.map((slide) => ({ deck: d, slide })));
    let sameDeck = 0;
    let samePointer = 0;
    for (const deck of corpus.decks) {
      for (const slide of deck.slides) {
        for (const fact of smallOf(slide.facts)) {
          const question = Object.values(corpus.questions)
            .flat()
            .find((q) => q.metadata.factId === fact.id)!;
          const marksRole = (s: SlideFact[]) => smallOf(s).some((f) => f.role === fact.role);
          // Another slide of the deck with a region of the same role (holding another fact), and
          // another deck's slide that prints the same pointer line (pointer lines name no organisation).
          const others = [
            deck.slides.find((s) => s !== slide && marksRole(s.facts)),
            all.find(
              (o) =>
                o.deck !== deck &&
                marksRole(o.slide.facts) &&
                o.slide.facts.some((f) => f.pointer?.line === fact.pointer!.line),
            )?.slide,
          ];
          for (const [k, other] of others.entries()) {
            if (!other) continue;
            const shown = `[page ${other.basename} (640x360)]\n${perceivedSlideText(other)}`;
            expect(shown).toContain(`[${fact.role} at `);
            if (k === 1) expect(shown).toContain(fact.pointer!.line);
            const context = `Question: ${question.question}\n<search>${question.metadata.query}</search><information>${shown}</information>`;
            expect(script({ turn: 1, context, rolloutId: 0 } as Parameters<typeof script>[0])).toBe(
              `<search>${question.metadata.query}</search>`,
            );
            if (k === 0) sameDeck++;
            else samePointer++;
          }
        }
      }
    }
    expect(sameDeck).toBeGreaterThan(10);
    expect(samePointer).toBeGreaterThan(10);
  });

  it('make the oracle crop only where search_complete still fits the turn budget, and search only where a crop would', () => {
    const script = createOracleScript(corpus, { maxTurns: 5 });
    const slide = slides.find((s) => smallOf(s.facts).length >= 1)!;
    const fact = smallOf(slide.facts)[0]!;
    const question = Object.values(corpus.questions)
      .flat()
      .find((q) => q.metadata.factId === fact.id)!;
    const page = (basename: string, text: string) =>
      `<search>${question.metadata.query}</search><information>[page ${basename} (640x360)]\n${text}</information>`;
    const golden = page(slide.basename, perceivedSlideText(slide));
    const other = page('elsewhere_1.png', `${question.metadata.entity} overview`);
    const at = (turn: number, pages: string[]) =>
      script({
        turn,
        context: `Question: ${question.question}\n${pages.join('')}`,
        rolloutId: 0,
      } as Parameters<typeof script>[0]);
    const crop = `<bbox>${fact.role}</bbox>`;
    // Turn 3 (the fourth of five): the crop and search_complete fit.
    expect(at(3, [other, other, golden])).toBe(crop);
    // Turn 4 (the last): a crop would be cut off by the budget, with no answer; the oracle completes.
    expect(at(4, [other, other, other, golden])).toBe('<search_complete>true</search_complete>');
    // Turn 2: a third search fits (its page could still be cropped); turn 3: it would not.
    expect(at(2, [other, other])).toBe(`<search>${question.metadata.query}</search>`);
    expect(at(3, [other, other, other].slice(0, 2))).toBe('<search_complete>true</search_complete>');
    // Without a budget it searches up to maxSearches (3) and crops whenever the region is shown.
    const unbounded = createOracleScript(corpus);
    const ctx = (pages: string[]) => `Question: ${question.question}\n${pages.join('')}`;
    expect(unbounded({ turn: 4, context: ctx([other, other, golden]), rolloutId: 0 } as never)).toBe(crop);
  });
});
