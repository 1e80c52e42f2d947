import { InvalidArgumentError } from '../errors';
import type { BoundingBox } from '../../ports/types';

/**
 * Quantized location tokens, as vision-language models write a box (PaliGemma's `<locXXXX>`):
 * each coordinate is one of `LOCATION_BINS` bins of the shown image's side, so a box is four
 * tokens whatever the image's size, and a vocabulary needs `4 x (LOCATION_BINS + 1)` entries in
 * all, not one per region. Each coordinate has its own tokens, `<x1_k> <y1_k> <x2_k> <y2_k>`
 * (order `x1 y1 x2 y2`, as the pixel form `[x1, y1, x2, y2]`): a small policy copies a box from
 * its context by what each token is, as it copies a name, where with one shared `<loc_k>` it must
 * count positions, which a 2-layer policy did not learn (docs/method.md#regions-to-choose).
 */
export const LOCATION_BINS = 32;

/** The four corners' slots of a box in location tokens, in order (`<x1_k><y1_k><x2_k><y2_k>`). */
export const LOCATION_SLOTS = ['x1', 'y1', 'x2', 'y2'] as const;

/** Every location token, `<x1_0>` … `<y2_32>` (a corner may sit on the far edge). */
export const LOCATION_TOKENS: readonly string[] = LOCATION_SLOTS.flatMap((slot) =>
  Array.from({ length: LOCATION_BINS + 1 }, (_, k) => `<${slot}_${k}>`),
);

/** The token of coordinate `slot` (0: x1, 1: y1, 2: x2, 3: y2) at `bin`. */
export const locationToken = (slot: number, bin: number): string => `<${LOCATION_SLOTS[slot]}_${bin}>`;

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

/** `box` as its four location tokens, `<x1_1><y1_28><x2_15><y2_32>`. */
export function locationText(box: BoundingBox, width: number, height: number): string {
  return locationBinsText(boxToLocationBins(box, width, height));
}

/** Four bins as their location tokens. */
export function locationBinsText(bins: BoundingBox): string {
  return bins.map((bin, slot) => locationToken(slot, bin)).join('');
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

// One run of spaces, or spaces around one comma: two adjacent `\\s*` would backtrack
// polynomially on a long run of spaces that then fails to match.
const SEP = '\\s*(?:,\\s*)?';
const LOCATION_BODY = new RegExp(
  `^\\[?\\s*${LOCATION_SLOTS.map((slot) => `<${slot}_(\\d+)>`).join(SEP)}\\s*\\]?$`,
  'i',
);

/**
 * A bbox body of four location tokens (brackets, commas and spaces between them allowed) -> its
 * bins; `null` when the body is not location tokens (then it may be numbers); a problem when it
 * is but a bin is past `LOCATION_BINS` or the box is empty.
 */
export function parseLocationBins(body: string): BoundingBox | 'format' | 'empty' | null {
  const match = LOCATION_BODY.exec(body.trim());
  if (!match) return /<[xy][12]_/i.test(body) ? 'format' : null;
  const bins = match.slice(1, 5).map(Number);
  if (bins.some((b) => !(b <= LOCATION_BINS))) return 'format';
  const [x1, y1, x2, y2] = bins as [number, number, number, number];
  if (x2 <= x1 || y2 <= y1) return 'empty';
  return [x1, y1, x2, y2];
}

/**
 * A region a page marks by name, as set-of-marks prompting labels the parts of an image: the page
 * text shows `[label at <x1_k><y1_k><x2_k><y2_k>]`, and a crop may name the region
 * (`<bbox>label</bbox>`) instead of writing its box. The label is what the region is (a footnote,
 * a source line), never what it says.
 */
export interface RegionMark {
  label: string;
  bins: BoundingBox;
}

/** A region's name: letters (with their combining marks), single spaces and hyphens, at most 48 characters. */
const NAME = /^\p{L}[\p{L}\p{M} -]{0,47}$/u;

/**
 * A region's name as marks and crops compare it: NFC, trimmed, runs of spaces as one, lower-cased;
 * `null` when it is not a name (a digit, a bracket, empty, over 48 characters).
 */
export function normaliseRegionName(text: string): string | null {
  const name = text.normalize('NFC').trim().replace(/\s+/g, ' ').toLowerCase();
  return NAME.test(name) ? name : null;
}

/** `text` normalised as a region's name (normaliseRegionName), or an InvalidArgumentError naming `argument`. */
export function requireRegionName(text: string, argument: string): string {
  const name = normaliseRegionName(text);
  if (name === null)
    throw new InvalidArgumentError({
      argument,
      message: `'${text}' is not a region name: letters, spaces and hyphens, at most 48 characters`,
    });
  return name;
}

/**
 * The inside of a region's mark, `label at <x1_k><y1_k><x2_k><y2_k>` (the label normalised): what
 * a page shows in brackets (regionMarkText), and what a crop may write to name that box.
 */
export function regionMarkBody(label: string, bins: BoundingBox): string {
  const name = requireRegionName(label, 'label');
  const valid = parseLocationBins(locationBinsText(bins));
  if (valid === null || typeof valid === 'string')
    throw new InvalidArgumentError({
      argument: 'bins',
      message: `[${bins.join(', ')}] is not a box of location bins (0-${LOCATION_BINS}, x2 > x1, y2 > y1)`,
    });
  return `${name} at ${locationBinsText(bins)}`;
}

/** The text a page shows for a marked region: `[label at <x1_k><y1_k><x2_k><y2_k>]` (the label normalised). */
export function regionMarkText(label: string, bins: BoundingBox): string {
  return `[${regionMarkBody(label, bins)}]`;
}

/** A mark's inside: its label, ` at `, its four location tokens. */
const MARK_BODY = `([\\p{L}][\\p{L}\\p{M} -]{0,47}?) at ((?:<(?:${LOCATION_SLOTS.join('|')})_\\d+>){4})`;
const MARK = new RegExp(`\\[${MARK_BODY}\\]`, 'gu');
const MARK_ALONE = new RegExp(`^\\s*${MARK_BODY}\\s*$`, 'u');

/**
 * The location tokens of a mark's inside written alone (regionMarkBody: a crop that copies the
 * page's mark, `footnote at <x1_3><y1_24><x2_13><y2_29>`), or null; the label is not read.
 */
export function markedBoxText(text: string): string | null {
  return MARK_ALONE.exec(text.normalize('NFC'))?.[2] ?? null;
}

/**
 * The regions a page's text marks (regionMarkText), in order, their labels normalised
 * (normaliseRegionName); a mark whose label is not a name or whose box is not valid is skipped.
 */
export function parseRegionMarks(text: string): RegionMark[] {
  const marks: RegionMark[] = [];
  for (const match of text.normalize('NFC').matchAll(MARK)) {
    const label = normaliseRegionName(match[1]!);
    const bins = parseLocationBins(match[2]!);
    if (label !== null && bins !== null && typeof bins !== 'string') marks.push({ label, bins });
  }
  return marks;
}
