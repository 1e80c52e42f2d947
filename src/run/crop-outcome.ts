import type { Trajectory } from '../core/trajectory/trajectory';
import type { PromptRecord } from '../core/types';

/**
 * What an episode's crops did for its question (the slide environment's questions carry where the
 * fact is printed, `metadata.factBox`, and whether it is small print, `metadata.small`):
 * - `right`: small print, and a crop of its golden page covers the fact's box (the region that holds it);
 * - `wrong`: small print, cropped, but no crop covers the fact on its page (another region, a box
 *   too small, or another page);
 * - `needless`: the fact is in large type, legible on its page, and the episode cropped anyway;
 * - `none`: no crop.
 * `null` for a question without that metadata (a run on your own data).
 */
export type CropOutcome = 'right' | 'wrong' | 'needless' | 'none';

/** The reader's tolerance for a box edge (src/env/slides/reader.ts). */
const EDGE_TOLERANCE_PX = 2;

interface FactPlace {
  small: boolean;
  factBox: readonly [number, number, number, number] | null;
}

/** The question's small flag and fact box, where it has them. */
export function factPlace(question: PromptRecord): FactPlace | null {
  const metadata = question.metadata as { small?: unknown; factBox?: unknown } | undefined;
  if (typeof metadata?.small !== 'boolean') return null;
  return { small: metadata.small, factBox: isBox(metadata.factBox) ? metadata.factBox : null };
}

/** Four numbers, [x1, y1, x2, y2]. */
function isBox(value: unknown): value is readonly [number, number, number, number] {
  return Array.isArray(value) && value.length === 4 && value.every((v) => typeof v === 'number');
}

export function cropOutcome(trajectory: Trajectory, place: FactPlace | null): CropOutcome | null {
  if (!place) return null;
  const crops = trajectory.turns.flatMap((turn) => (turn.crop ? [turn.crop] : []));
  if (crops.length === 0) return 'none';
  if (!place.small) return 'needless';
  const box = place.factBox;
  const covers = crops.some(
    (crop) =>
      box !== null &&
      trajectory.goldenBasenames.includes(crop.basename) &&
      box[0] >= crop.sourceRegion[0] - EDGE_TOLERANCE_PX &&
      box[1] >= crop.sourceRegion[1] - EDGE_TOLERANCE_PX &&
      box[2] <= crop.sourceRegion[2] + EDGE_TOLERANCE_PX &&
      box[3] <= crop.sourceRegion[3] + EDGE_TOLERANCE_PX,
  );
  return covers ? 'right' : 'wrong';
}

export interface CropFigures {
  /** Of the small-print questions whose episode cropped: the share whose crop covered the fact's region on its page. */
  rightRegionRate: number | null;
  /** Of the small-print questions whose episode cropped: the share whose crops missed it. */
  wrongRegionRate: number | null;
  /** Of the questions whose fact is legible on its page (large type): the share whose episode cropped. */
  needlessCropRate: number | null;
  /** The counts behind the rates. */
  crops: { right: number; wrong: number; needless: number; smallCropped: number; large: number };
}

/** The crop figures of trajectories over their questions (null rates where nothing is counted). */
export function cropFigures(
  questions: readonly PromptRecord[],
  trajectories: readonly Trajectory[],
): CropFigures {
  const places = new Map(questions.map((q) => [q.uid, factPlace(q)] as const));
  let right = 0;
  let wrong = 0;
  let needless = 0;
  let large = 0;
  for (const t of trajectories) {
    const place = places.get(t.promptUid) ?? null;
    const outcome = cropOutcome(t, place);
    if (place && !place.small) large++;
    if (outcome === 'right') right++;
    else if (outcome === 'wrong') wrong++;
    else if (outcome === 'needless') needless++;
  }
  const smallCropped = right + wrong;
  return {
    rightRegionRate: smallCropped === 0 ? null : right / smallCropped,
    wrongRegionRate: smallCropped === 0 ? null : wrong / smallCropped,
    needlessCropRate: large === 0 ? null : needless / large,
    crops: { right, wrong, needless, smallCropped, large },
  };
}
