import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { alignToPixels } from '../../core/episode/image-frame';
import type { StepRollout } from './curves';

/** Where an episode came from: the store run (a phase or an evaluation), its step, prompt and rollout. */
export interface EpisodeOrigin {
  storeRun: string;
  kind: 'training' | 'evaluation';
  /** The store run's own step (0 for an evaluation). */
  step: number;
  /** The run's step (the phases one after another), `null` for an evaluation. */
  runStep: number | null;
  promptUid: string;
  rollout: number;
  sampleId: string;
}

/** A crop: its region on the page (source pixels), and the crop itself at full size (no resizing). */
export interface ReportCrop {
  basename: string;
  region: [number, number, number, number];
  src: string;
  width: number;
  height: number;
}

export interface ReportEpisode {
  origin: EpisodeOrigin;
  question: string;
  reference: string | null;
  answer: string;
  terminated: string;
  reward: number | null;
  judge: number | null;
  ndcg: number | null;
  golden: string[];
  turns: Array<{ text: string; observation: string; page: string | null; crop: ReportCrop | null }>;
}

/** A page image as stored (its file's bytes, not re-encoded) with its size, once per page. */
export interface ReportPage {
  src: string;
  width: number;
  height: number;
}

/** Up to `limit` of `items`, spread evenly over them (first and last included), in order. */
export function spread<T>(items: readonly T[], limit: number): T[] {
  if (items.length <= limit) return [...items];
  if (limit <= 1) return items.slice(0, limit);
  return Array.from({ length: limit }, (_, k) => items[Math.round((k * (items.length - 1)) / (limit - 1))]!);
}

const MIME: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
};

/**
 * The episode browser's episodes from store runs (each run's rollouts, already chosen) and the
 * pages they show, read from `pagesDir` (the slide corpus): each page once, each crop extracted at
 * the size of its region on the page. A page that cannot be read is left out (the episode says so).
 */
export async function reportEpisodes(
  runs: ReadonlyArray<{
    storeRun: string;
    kind: EpisodeOrigin['kind'];
    stepOffset: number;
    rollouts: readonly StepRollout[];
  }>,
  pagesDir: string | null,
): Promise<{ episodes: ReportEpisode[]; pages: Record<string, ReportPage> }> {
  const pages: Record<string, ReportPage> = {};
  const missing = new Set<string>();
  const page = async (basename: string): Promise<string | null> => {
    if (pages[basename]) return basename;
    if (!pagesDir || missing.has(basename) || basename.includes('/') || basename.includes('\\')) return null;
    try {
      const bytes = await readFile(join(pagesDir, basename));
      const { width, height, format } = await sharp(bytes).metadata();
      if (!width || !height) throw new Error('no size');
      const mime = MIME[format ?? ''] ?? 'image/png';
      pages[basename] = { src: `data:${mime};base64,${bytes.toString('base64')}`, width, height };
      return basename;
    } catch {
      missing.add(basename);
      return null;
    }
  };
  const crop = async (basename: string, region: readonly number[]): Promise<ReportCrop | null> => {
    if ((await page(basename)) === null) return null;
    const { width: pageWidth, height: pageHeight } = pages[basename]!;
    const [x1, y1, x2, y2] = region as [number, number, number, number];
    // The pixels the episode's crop took (whole pixels, rounded outwards, as ImageOps crops).
    const [left, top, right, bottom] = alignToPixels([x1, y1, x2, y2], pageWidth, pageHeight);
    const width = right - left;
    const height = bottom - top;
    try {
      const png = await sharp(join(pagesDir!, basename))
        .extract({ left, top, width, height })
        .png()
        .toBuffer();
      return {
        basename,
        region: [x1, y1, x2, y2],
        src: `data:image/png;base64,${png.toString('base64')}`,
        width,
        height,
      };
    } catch {
      return null;
    }
  };
  const episodes: ReportEpisode[] = [];
  for (const run of runs) {
    for (const { step, trajectory: t } of run.rollouts) {
      const turns: ReportEpisode['turns'] = [];
      for (const turn of t.turns) {
        turns.push({
          text: turn.text,
          observation: turn.observation,
          page: turn.search?.chosenBasename ? await page(turn.search.chosenBasename) : null,
          crop: turn.crop ? await crop(turn.crop.basename, turn.crop.sourceRegion) : null,
        });
      }
      episodes.push({
        origin: {
          storeRun: run.storeRun,
          kind: run.kind,
          step,
          runStep: run.kind === 'training' ? run.stepOffset + step : null,
          promptUid: t.promptUid,
          rollout: t.rolloutIndex,
          sampleId: t.sampleId,
        },
        question: t.query,
        reference: t.reference,
        answer: t.finalAnswer,
        terminated: t.terminated,
        reward: t.reward,
        judge: t.rewardDetail?.components.judgeScore ?? null,
        ndcg: t.rewardDetail?.components.ndcg ?? null,
        golden: t.goldenBasenames,
        turns,
      });
    }
  }
  return { episodes, pages };
}
