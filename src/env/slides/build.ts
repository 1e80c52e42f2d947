import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { indexPageFolder } from '../../adapters/search/sqlite-fts';
import { generateSlideCorpus, slideText, SLIDE_HEIGHT, SLIDE_WIDTH, TITLE_FONT_PX, type Slide, type SlideCorpus, type SlideCorpusSettings } from './corpus';

const escapeXml = (text: string) => text.replace(/[<>&'"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!);

/** A slide as SVG: a title band, facts in large type, small print at the bottom (DejaVu Sans). */
export function slideSvg(slide: Slide): string {
  const facts = slide.facts
    .map((f) => `<text x="${f.box[0]}" y="${f.box[3] - Math.ceil(f.fontPx * 0.3)}" font-size="${f.fontPx}" fill="${f.small ? '#444444' : '#111111'}">${escapeXml(f.line)}</text>`)
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${SLIDE_WIDTH}" height="${SLIDE_HEIGHT}" font-family="DejaVu Sans, sans-serif">` +
    `<rect width="${SLIDE_WIDTH}" height="${SLIDE_HEIGHT}" fill="#ffffff"/><rect width="${SLIDE_WIDTH}" height="64" fill="#1f3a5f"/>` +
    `<text x="40" y="44" font-size="${TITLE_FONT_PX}" font-weight="bold" fill="#ffffff">${escapeXml(slide.title)}</text>` +
    `<text x="${SLIDE_WIDTH - 60}" y="${SLIDE_HEIGHT - 30}" font-size="12" fill="#888888">${slide.page}</text>` +
    `${facts}</svg>`
  );
}

export async function renderSlide(slide: Slide): Promise<Buffer> {
  return sharp(Buffer.from(slideSvg(slide))).png({ compressionLevel: 9 }).toBuffer();
}

export interface SlideEnvironment {
  corpus: SlideCorpus;
  /** Folder of `{deck}_{page}.png` with a `.txt` beside each. */
  slidesDir: string;
  /** The SQLite FTS5 index over the slides' text. */
  dbPath: string;
  /** False when the cached corpus matched the settings and was reused. */
  rebuilt: boolean;
}

/**
 * Generates the slide corpus into `dir` (PNG + text per slide, `corpus.json`, the FTS5 index) on
 * first use and reuses it while the settings are the same. Rendering is the slow part (about
 * 2000 slides at the default size).
 */
export async function buildSlideEnvironment(dir: string, settings: Partial<SlideCorpusSettings> = {}, options: { onProgress?: (done: number, total: number) => void } = {}): Promise<SlideEnvironment> {
  const corpus = generateSlideCorpus(settings);
  const slidesDir = join(dir, 'slides');
  const dbPath = join(dir, 'index.sqlite');
  const manifestPath = join(dir, 'corpus.json');
  const manifest = JSON.stringify({ format: 'searcher-rl.slide-corpus.v1', settings: corpus.settings });
  let cached: string | null = null;
  try {
    cached = await readFile(join(dir, 'settings.json'), 'utf8');
  } catch {
    cached = null;
  }
  if (cached === manifest) {
    await indexPageFolder(dbPath, slidesDir);
    return { corpus, slidesDir, dbPath, rebuilt: false };
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(slidesDir, { recursive: true });
  const slides = corpus.decks.flatMap((d) => d.slides);
  let done = 0;
  // A few at a time: libvips renders on its own threads.
  const queue = [...slides];
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let slide = queue.shift(); slide; slide = queue.shift()) {
        await writeFile(join(slidesDir, slide.basename), await renderSlide(slide));
        await writeFile(join(slidesDir, slide.basename.replace(/\.png$/, '.txt')), slideText(slide));
        options.onProgress?.(++done, slides.length);
      }
    }),
  );
  await writeFile(manifestPath, JSON.stringify(corpus));
  await indexPageFolder(dbPath, slidesDir);
  // Written last: an interrupted build is redone next time.
  await writeFile(join(dir, 'settings.json'), manifest);
  return { corpus, slidesDir, dbPath, rebuilt: true };
}
