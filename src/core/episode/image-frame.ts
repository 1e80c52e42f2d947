import type { BoundingBox, PageImage } from '../../ports/types';
import type { RegionMark } from '../protocol/location';

/** The image the next bbox applies to: a page or a crop, with the frame that maps back to the page. */
export interface ShownImage {
  basename: string;
  source: PageImage;
  /** The region of `source` this image shows, in source pixels. */
  region: BoundingBox;
  shownWidth: number;
  shownHeight: number;
  /** The regions the page's text marks by name (a page, not a crop): what `<bbox>name</bbox>` crops. */
  marks?: readonly RegionMark[];
}

/** Size of an image as shown to the policy, with its longer side capped at `maxSide`. */
export function shownSize(
  width: number,
  height: number,
  maxSide: number | null,
): { width: number; height: number } {
  if (maxSide === null || Math.max(width, height) <= maxSide) return { width, height };
  const scale = maxSide / Math.max(width, height);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/**
 * Maps a bbox in the shown image's pixels to the source page's pixels, through the frame of the
 * shown image: a resized page, or a crop of a crop (docs/method.md#crops: the reference
 * implementation scaled against the crop but cut the original).
 */
export function mapToSource(
  bbox: BoundingBox,
  shown: { region: BoundingBox; shownWidth: number; shownHeight: number },
): BoundingBox {
  const [rx1, ry1, rx2, ry2] = shown.region;
  const sx = (rx2 - rx1) / shown.shownWidth;
  const sy = (ry2 - ry1) / shown.shownHeight;
  const [x1, y1, x2, y2] = bbox;
  return [rx1 + x1 * sx, ry1 + y1 * sy, rx1 + x2 * sx, ry1 + y2 * sy];
}

/** A mapped edge this close to a whole pixel is on it: the scaling's float error, not a pixel more. */
export const PIXEL_EDGE_TOLERANCE = 1e-6;

/** Whether a region lies inside a width x height image, up to float error at the edges. */
export function insideImage(region: BoundingBox, width: number, height: number): boolean {
  const [x1, y1, x2, y2] = region;
  return (
    x1 >= -PIXEL_EDGE_TOLERANCE &&
    y1 >= -PIXEL_EDGE_TOLERANCE &&
    x2 <= width + PIXEL_EDGE_TOLERANCE &&
    y2 <= height + PIXEL_EDGE_TOLERANCE
  );
}

/**
 * The whole pixels a region covers (left and top rounded down, right and bottom up, float error
 * snapped to the nearest edge), clamped to the image and at least one pixel a side. The core
 * stores this region and both image adapters cut exactly it, so a crop of a crop maps through
 * the region that was really cut.
 */
export function alignToPixels(region: BoundingBox, width: number, height: number): BoundingBox {
  const snap = (v: number) => (Math.abs(v - Math.round(v)) <= PIXEL_EDGE_TOLERANCE ? Math.round(v) : v);
  const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
  const x1 = clamp(Math.floor(snap(region[0])), 0, width - 1);
  const y1 = clamp(Math.floor(snap(region[1])), 0, height - 1);
  const x2 = clamp(Math.ceil(snap(region[2])), x1 + 1, width);
  const y2 = clamp(Math.ceil(snap(region[3])), y1 + 1, height);
  return [x1, y1, x2, y2];
}

/**
 * Uncompressed RGBA, 4 bytes a pixel, row-major: images that need no codec (tests, synthetic data;
 * `createRawImage` in searcher-rl/mock). The ImageOps adapters that read them name it from here.
 */
export const RAW_RGBA_MIME = 'image/x-raw-rgba';
