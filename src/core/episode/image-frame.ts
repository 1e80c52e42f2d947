import type { BoundingBox, PageImage } from '../../ports/types';

/** The image the next bbox applies to: a page or a crop, with the frame that maps back to the page. */
export interface ShownImage {
  basename: string;
  source: PageImage;
  /** The region of `source` this image shows, in source pixels. */
  region: BoundingBox;
  shownWidth: number;
  shownHeight: number;
}

/** Size of an image as shown to the policy, with its longer side capped at `maxSide`. */
export function shownSize(width: number, height: number, maxSide: number | null): { width: number; height: number } {
  if (maxSide === null || Math.max(width, height) <= maxSide) return { width, height };
  const scale = maxSide / Math.max(width, height);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/**
 * Maps a bbox in the shown image's pixels to the source page's pixels, through the frame of the
 * shown image: a resized page, or a crop of a crop (docs/method.md#crops: the reference
 * implementation scaled against the crop but cut the original).
 */
export function mapToSource(bbox: BoundingBox, shown: { region: BoundingBox; shownWidth: number; shownHeight: number }): BoundingBox {
  const [rx1, ry1, rx2, ry2] = shown.region;
  const sx = (rx2 - rx1) / shown.shownWidth;
  const sy = (ry2 - ry1) / shown.shownHeight;
  const [x1, y1, x2, y2] = bbox;
  return [rx1 + x1 * sx, ry1 + y1 * sy, rx1 + x2 * sx, ry1 + y2 * sy];
}
