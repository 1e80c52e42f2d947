import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { createSharpImageOps } from '../../adapters/image/sharp-image-ops';
import { createSqliteSearchEngine } from '../../adapters/sqlite-fts/sqlite-fts';
import { buildSlideEnvironment } from './build';
import { generateSlideCorpus, SLIDE_HEIGHT, SLIDE_WIDTH } from './corpus';
import { createSlideReader } from './reader';
import type { Evidence } from '../../ports/types';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('slide corpus', () => {
  it('is the same for the same seed, with disjoint splits and golden pages that exist', () => {
    const a = generateSlideCorpus({ seed: 3, decks: 30 });
    expect(generateSlideCorpus({ seed: 3, decks: 30 })).toEqual(a);
    expect(generateSlideCorpus({ seed: 4, decks: 30 })).not.toEqual(a);
    const basenames = new Set(a.decks.flatMap((d) => d.slides.map((s) => s.basename)));
    const all = [...a.questions.train, ...a.questions.validation, ...a.questions.test];
    expect(new Set(all.map((q) => q.uid)).size).toBe(all.length);
    expect(new Set(all.map((q) => q.question)).size).toBe(all.length);
    expect(all.every((q) => q.goldenBasenames.every((b) => basenames.has(b)))).toBe(true);
    // Whole decks per split: the test split is its share, give or take one deck's questions.
    const largestDeck = Math.max(...a.decks.map((d) => d.slides.length * 6));
    expect(a.questions.test.length).toBeGreaterThanOrEqual(Math.round(all.length * 0.1));
    expect(a.questions.test.length).toBeLessThan(Math.round(all.length * 0.1) + largestDeck);
    for (const deck of a.decks) expect(deck.slides.length).toBeGreaterThanOrEqual(5);
    const small = all.filter((q) => q.metadata.small).length / all.length;
    expect(small).toBeGreaterThan(0.05);
    expect(small).toBeLessThan(0.3);
    expect(() => generateSlideCorpus({ minSlides: 6, maxSlides: 5 })).toThrow(/corpus.maxSlides/);
  });

  it('holds out by page and entity: no held-out question shares an entity or golden page with a training question', () => {
    for (const seed of [1, 2, 3]) {
      const { questions } = generateSlideCorpus({ seed, decks: 60 });
      const trainEntities = new Set(questions.train.map((q) => q.metadata.entity));
      const trainPages = new Set(questions.train.flatMap((q) => q.goldenBasenames));
      for (const held of [questions.validation, questions.test]) {
        expect(held.length).toBeGreaterThan(0);
        for (const q of held) {
          expect(trainEntities.has(q.metadata.entity)).toBe(false);
          for (const page of q.goldenBasenames) expect(trainPages.has(page)).toBe(false);
        }
      }
      const testEntities = new Set(questions.test.map((q) => q.metadata.entity));
      expect(questions.validation.some((q) => testEntities.has(q.metadata.entity))).toBe(false);
    }
    // A corpus of one deck still trains (nothing held out).
    const one = generateSlideCorpus({ seed: 1, decks: 1 });
    expect(one.questions.train.length).toBeGreaterThan(0);
  });
});

describe('slide reader', () => {
  const corpus = generateSlideCorpus({ seed: 5, decks: 20, smallPrintRate: 1 });
  const reader = createSlideReader(corpus);
  const all = [...corpus.questions.train, ...corpus.questions.test, ...corpus.questions.validation];
  const large = all.find((q) => !q.metadata.small)!;
  const small = all.find((q) => q.metadata.small)!;
  const slideOf = (q: typeof large) =>
    corpus.decks.flatMap((d) => d.slides).find((s) => s.basename === q.goldenBasenames[0])!;

  it('answers from large print on a retrieved slide, and guesses wrong without it', async () => {
    const page: Evidence = { kind: 'page', basename: large.goldenBasenames[0]! };
    expect((await reader.doAnswer(large.question, [page])).answer).toBe(large.reference);
    const other: Evidence = {
      kind: 'page',
      basename:
        corpus.decks[1]!.slides[0]!.basename === page.basename
          ? corpus.decks[2]!.slides[0]!.basename
          : corpus.decks[1]!.slides[0]!.basename,
    };
    const guess = (await reader.doAnswer(large.question, [other])).answer;
    expect(guess).not.toBe(large.reference);
    expect(guess).toBe((await reader.doAnswer(large.question, [])).answer);
    expect((await reader.doAnswer('What is the meaning of life?', [page])).answer).toBe('unknown');
  });

  it('reads small print only through a crop that enlarges it', async () => {
    const slide = slideOf(small);
    const fact = slide.facts.find((f) => f.id === small.metadata.factId)!;
    expect(
      (await reader.doAnswer(small.question, [{ kind: 'page', basename: slide.basename }])).answer,
    ).not.toBe(small.reference);
    const region: [number, number, number, number] = [
      fact.box[0] - 4,
      fact.box[1] - 4,
      fact.box[2] + 4,
      fact.box[3] + 4,
    ];
    const side = Math.max(region[2] - region[0], region[3] - region[1]);
    const enlarged: Evidence = {
      kind: 'crop',
      basename: slide.basename,
      sourceRegion: region,
      image: { mimeType: 'image/png', width: side * 3, height: 30, bytes: new Uint8Array() },
    };
    expect((await reader.doAnswer(small.question, [enlarged])).answer).toBe(small.reference);
    const notEnlarged: Evidence = {
      ...enlarged,
      image: { mimeType: 'image/png', width: side, height: 10, bytes: new Uint8Array() },
    };
    expect((await reader.doAnswer(small.question, [notEnlarged])).answer).not.toBe(small.reference);
    const elsewhere: Evidence = { ...enlarged, sourceRegion: [0, 0, 100, 40] };
    expect((await reader.doAnswer(small.question, [elsewhere])).answer).not.toBe(small.reference);
  });
});

describe('buildSlideEnvironment', () => {
  it('builds once when several processes start on an empty cache at the same moment (two serve-env in one checkout)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-slides-race-'));
    dirs.push(dir);
    const settings = { seed: 5, decks: 3, minSlides: 5, maxSlides: 5, smallPrintRate: 0.5 };
    const script = `import { buildSlideEnvironment } from ${JSON.stringify(join(import.meta.dirname, 'build.ts'))};
const env = await buildSlideEnvironment(process.argv[2], JSON.parse(process.argv[3]));
console.log(JSON.stringify({ rebuilt: env.rebuilt, dbPath: env.dbPath }));`;
    const scriptPath = join(dir, 'build.mts');
    await writeFile(scriptPath, script);
    const tsx = join(import.meta.dirname, '../../../node_modules/.bin/tsx');
    const run = () =>
      new Promise<{ rebuilt: boolean; dbPath: string }>((resolve, reject) =>
        execFile(tsx, [scriptPath, dir, JSON.stringify(settings)], { timeout: 120_000 }, (error, out, err) =>
          error
            ? reject(new Error(`${error.message}\n${err}`))
            : resolve(JSON.parse(out.trim().split('\n').at(-1)!)),
        ),
      );
    const results = await Promise.all([run(), run(), run()]);
    expect(results.filter((r) => r.rebuilt)).toHaveLength(1);
    const engine = createSqliteSearchEngine({ dbPath: results[0]!.dbPath });
    expect((await engine.doSearch('revenue', { topK: 3 })).length).toBeGreaterThan(0);
    engine.close();
  }, 180_000);

  it('renders the slides, indexes them for BM25, and reuses the build', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-slides-'));
    dirs.push(dir);
    const settings = { seed: 2, decks: 3, minSlides: 5, maxSlides: 6, smallPrintRate: 1 };
    const env = await buildSlideEnvironment(dir, settings);
    expect(env.rebuilt).toBe(true);
    const slide = env.corpus.decks[0]!.slides[1]!;
    const meta = await sharp(join(env.slidesDir, slide.basename)).metadata();
    expect([meta.width, meta.height]).toEqual([SLIDE_WIDTH, SLIDE_HEIGHT]);
    const engine = createSqliteSearchEngine({ dbPath: env.dbPath });
    const question = env.corpus.questions.train.find((q) => !q.metadata.small)!;
    const hits = await engine.doSearch(question.question, { topK: 5 });
    expect(hits.map((h) => h.basename)).toContain(question.goldenBasenames[0]);
    expect(hits[0]!.image).toMatchObject({ mimeType: 'image/png', width: SLIDE_WIDTH, height: SLIDE_HEIGHT });
    engine.close();
    expect((await buildSlideEnvironment(dir, settings)).rebuilt).toBe(false);

    // End to end through real pixels: crop the small print with sharp and let the reader read it.
    const small = env.corpus.questions.train
      .concat(env.corpus.questions.test, env.corpus.questions.validation)
      .find((q) => q.metadata.small)!;
    const smallSlide = env.corpus.decks
      .flatMap((d) => d.slides)
      .find((s) => s.basename === small.goldenBasenames[0])!;
    const fact = smallSlide.facts.find((f) => f.small)!;
    const bytes = new Uint8Array(await sharp(join(env.slidesDir, smallSlide.basename)).toBuffer());
    const region: [number, number, number, number] = [
      fact.box[0] - 4,
      fact.box[1] - 4,
      fact.box[2] + 4,
      Math.min(SLIDE_HEIGHT, fact.box[3] + 4),
    ];
    const crop = await createSharpImageOps().doCrop(
      { mimeType: 'image/png', width: SLIDE_WIDTH, height: SLIDE_HEIGHT, bytes },
      region,
      { minOutputSide: 768 },
    );
    const reader = createSlideReader(env.corpus);
    expect(
      (
        await reader.doAnswer(small.question, [
          { kind: 'crop', basename: smallSlide.basename, sourceRegion: region, image: crop },
        ])
      ).answer,
    ).toBe(small.reference);
  }, 60_000);
});
