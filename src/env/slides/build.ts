import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { indexPageFolder } from '../../adapters/sqlite-fts/sqlite-fts';
import {
  type BoxPx,
  FACT_FONT_PX,
  generateSlideCorpus,
  SLIDE_HEIGHT,
  SLIDE_WIDTH,
  TITLE_FONT_PX,
  type Slide,
  type SlideCorpus,
  type SlideCorpusSettings,
} from './corpus';
import { withFileLock } from './build-lock';
import { perceivedSlideText, slideText } from './slide-text';

const escapeXml = (text: string) =>
  text.replace(
    /[<>&'"]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!,
  );

/** A slide as SVG: a title band, facts in large type, small print at the bottom (DejaVu Sans). */
export function slideSvg(slide: Slide): string {
  const text = (box: BoxPx, fontPx: number, fill: string, line: string) =>
    `<text x="${box[0]}" y="${box[3] - Math.ceil(fontPx * 0.3)}" font-size="${fontPx}" fill="${fill}">${escapeXml(line)}</text>`;
  const facts = slide.facts
    .map(
      (f) =>
        text(f.box, f.fontPx, f.small ? '#444444' : '#111111', f.line) +
        (f.pointer ? text(f.pointer.box, FACT_FONT_PX, '#111111', f.pointer.line) : ''),
    )
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${SLIDE_WIDTH}" height="${SLIDE_HEIGHT}" font-family="DejaVu Sans, sans-serif">` +
    `<rect width="${SLIDE_WIDTH}" height="${SLIDE_HEIGHT}" fill="#ffffff"/><rect width="${SLIDE_WIDTH}" height="64" fill="#1f3a5f"/>` +
    `<text x="40" y="44" font-size="${TITLE_FONT_PX}" font-weight="bold" fill="#ffffff">${escapeXml(slide.title)}</text>` +
    `<text x="${SLIDE_WIDTH - 60}" y="${SLIDE_HEIGHT - 30}" font-size="12" fill="#888888">${slide.page}</text>` +
    `${facts}</svg>`
  );
}

/**
 * A slide as PNG. zlib level 6, not 9: the same pixels (PNG is lossless) in 2.7 ms a slide instead
 * of 7.0 (4 at a time on this 2-core machine), 7% larger; the corpus renders in about 5 s, not 14.
 */
export async function renderSlide(slide: Slide): Promise<Buffer> {
  return sharp(Buffer.from(slideSvg(slide)))
    .png({ compressionLevel: 6 })
    .toBuffer();
}

/** Bumped when the rendering changes, so that cached slides are rendered again. */
const RENDERER_VERSION = 5;

/** Beside each slide's `.txt` (what the index searches): what a hit shows a text-only policy. */
const SHOWN_TEXT = '.shown.txt';

export interface SlideEnvironment {
  corpus: SlideCorpus;
  /** Folder of `{deck}_{page}.png` with a `.txt` beside each. */
  slidesDir: string;
  /** The SQLite FTS5 index over the slides' text. */
  dbPath: string;
  /** The corpus as JSON (what the frozen slide reader reads). */
  corpusPath: string;
  /** False when the cached corpus matched the settings and was reused. */
  rebuilt: boolean;
}

/**
 * Generates the slide corpus into a subfolder of `cacheDir` named by the corpus's digest (PNG +
 * text per slide, `corpus.json`, the FTS5 index) on first use, and reuses it while it is complete
 * and the corpus and renderer are the same. Rendering is the slow part (about 2000 slides).
 */
export async function buildSlideEnvironment(
  cacheDir: string,
  settings: Partial<SlideCorpusSettings> = {},
  options: { onProgress?: (done: number, total: number) => void } = {},
): Promise<SlideEnvironment> {
  const corpus = generateSlideCorpus(settings);
  // One subfolder per corpus (settings, content and renderer version): different corpora share a
  // cache folder without touching each other, and nothing else in the folder is ever deleted.
  // What a hit shows is part of the build: a change to it (the region placeholders) rebuilds too.
  const digest = createHash('sha256')
    .update(`${RENDERER_VERSION}\u0000${JSON.stringify(corpus)}`)
    .update(
      corpus.decks
        .flatMap((d) => d.slides)
        .map((slide) => perceivedSlideText(slide))
        .join('\u0000'),
    )
    .digest('hex');
  const dir = join(cacheDir, `slides-${digest.slice(0, 16)}`);
  const slidesDir = join(dir, 'slides');
  const dbPath = join(dir, 'index.sqlite');
  const marker = join(dir, 'complete.json');
  const corpusPath = join(dir, 'corpus.json');
  const slides = corpus.decks.flatMap((d) => d.slides);
  await mkdir(cacheDir, { recursive: true });
  // One build at a time per corpus: processes sharing the cache wait for it, then reuse it.
  return withFileLock(`${dir}.lock`, async (): Promise<SlideEnvironment> => {
    let complete = false;
    try {
      complete = JSON.parse(await readFile(marker, 'utf8')).digest === digest;
    } catch {
      complete = false;
    }
    if (complete) {
      const present = new Set(await readdir(slidesDir));
      const missing = slides.filter((slide) =>
        [
          slide.basename,
          slide.basename.replace(/\.png$/, '.txt'),
          slide.basename.replace(/\.png$/, SHOWN_TEXT),
        ].some((name) => !present.has(name)),
      );
      if (missing.length === 0) {
        await indexPageFolder(dbPath, slidesDir, { shownTextExtension: SHOWN_TEXT });
        return { corpus, slidesDir, dbPath, corpusPath, rebuilt: false };
      }
    }
    await rm(dir, { recursive: true, force: true });
    await mkdir(slidesDir, { recursive: true });
    let done = 0;
    // A few at a time: libvips renders on its own threads.
    const queue = [...slides];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let slide = queue.shift(); slide; slide = queue.shift()) {
          await writeFile(join(slidesDir, slide.basename), await renderSlide(slide));
          await writeFile(join(slidesDir, slide.basename.replace(/\.png$/, '.txt')), slideText(slide));
          await writeFile(
            join(slidesDir, slide.basename.replace(/\.png$/, SHOWN_TEXT)),
            perceivedSlideText(slide),
          );
          options.onProgress?.(++done, slides.length);
        }
      }),
    );
    await writeFile(corpusPath, JSON.stringify(corpus));
    await indexPageFolder(dbPath, slidesDir, { shownTextExtension: SHOWN_TEXT });
    // Written last: an interrupted build is redone next time.
    await writeFile(marker, JSON.stringify({ digest, settings: corpus.settings }));
    return { corpus, slidesDir, dbPath, corpusPath, rebuilt: true };
  });
}
