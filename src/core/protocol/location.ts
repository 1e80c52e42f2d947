import type { BoundingBox } from '../../ports/types';

/**
 * Quantized location tokens, as vision-language models write a box (PaliGemma's `<locXXXX>`, here
 * `<loc_k>`): each coordinate is one of `LOCATION_BINS` bins of the shown image's side, so a box
 * is four tokens whatever the image's size, and a vocabulary needs `LOCATION_BINS + 1` entries in
 * all, not one per region. Order `x1 y1 x2 y2`, as the pixel form `[x1, y1, x2, y2]`.
 */
export const LOCATION_BINS = 32;

/** Every location token, `<loc_0>` … `<loc_32>` (a corner may sit on the far edge). */
export const LOCATION_TOKENS: readonly string[] = Array.from(
  { length: LOCATION_BINS + 1 },
  (_, k) => `<loc_${k}>`,
);

export const locationToken = (bin: number): string => `<loc_${bin}>`;

/**
 * The four bins of the smallest box on the grid that covers `box` (pixels of an image of
 * `width` x `height`): the near corner rounded down, the far one up.
 */
export function boxToLocationBins(box: BoundingBox, width: number, height: number): BoundingBox {
  const bin = (value: number, side: number, round: (x: number) => number) =>
    Math.min(LOCATION_BINS, Math.max(0, round((value / side) * LOCATION_BINS)));
  return [
    bin(box[0], width, Math.floor),
    bin(box[1], height, Math.floor),
    bin(box[2], width, Math.ceil),
    bin(box[3], height, Math.ceil),
  ];
}

/** `box` as its four location tokens, `<loc_1><loc_29><loc_15><loc_31>`. */
export function locationText(box: BoundingBox, width: number, height: number): string {
  return boxToLocationBins(box, width, height).map(locationToken).join('');
}

/** Bins back to pixels of an image of `width` x `height`. */
export function locationBinsToBox(bins: BoundingBox, width: number, height: number): BoundingBox {
  return [
    (bins[0] * width) / LOCATION_BINS,
    (bins[1] * height) / LOCATION_BINS,
    (bins[2] * width) / LOCATION_BINS,
    (bins[3] * height) / LOCATION_BINS,
  ];
}

const LOCATION_BODY = /^\[?\s*((?:<loc_\d+>\s*,?\s*){4})\]?$/i;

/**
 * A bbox body of four location tokens (brackets, commas and spaces between them allowed) -> its
 * bins; `null` when the body is not location tokens (then it may be numbers); a problem when it
 * is but a bin is past `LOCATION_BINS` or the box is empty.
 */
export function parseLocationBins(body: string): BoundingBox | 'format' | 'empty' | null {
  const match = LOCATION_BODY.exec(body.trim());
  if (!match) return /<loc_/i.test(body) ? 'format' : null;
  const bins = [...match[1]!.matchAll(/<loc_(\d+)>/gi)].map((m) => Number(m[1]));
  if (bins.some((b) => !(b <= LOCATION_BINS))) return 'format';
  const [x1, y1, x2, y2] = bins as [number, number, number, number];
  if (x2 <= x1 || y2 <= y1) return 'empty';
  return [x1, y1, x2, y2];
}
