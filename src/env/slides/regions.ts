import type { Random } from '../../core/random';

// Where a slide's small print goes: one to three regions, each with a role (source, footnote,
// contact line) drawn apart from the fact it holds, at one of several places and sizes
// (src/env/slides/corpus.ts draws them). A line in large type points at each region.

/**
 * The roles of small-print regions. Any role may hold any attribute: the question names an
 * attribute, and only the page's pointer line (`Employees 2015: see footnote`) says which region
 * holds it, so the region to crop follows from reading the page, not from the question's template.
 */
export const SMALL_PRINT_ROLE_NAMES = ['source', 'footnote', 'contact line'] as const;

export type SmallPrintRole = (typeof SMALL_PRINT_ROLE_NAMES)[number];

/** The pointer a page prints in large type for a small-print line `Label: value`: `Label: see role`. */
export function pointerLine(line: string, role: SmallPrintRole): string {
  const colon = line.lastIndexOf(': ');
  return `${colon < 0 ? line : line.slice(0, colon)}: see ${role}`;
}

/** Small-print sizes in px: all below the reader's 14 px, so each needs an enlarging crop. */
export const SMALL_PRINT_SIZES_PX = [6, 7, 8] as const;

/**
 * Places for small print below the large lines (which end at y 212): three rows by two columns,
 * each jittered, so that no two regions touch and a box over two of them is too wide or too tall
 * for the crop to make either legible.
 */
const SLOTS: ReadonlyArray<{ x: number; baseline: number }> = [
  { x: 40, baseline: 250 },
  { x: 340, baseline: 250 },
  { x: 40, baseline: 298 },
  { x: 340, baseline: 298 },
  { x: 40, baseline: 346 },
  { x: 340, baseline: 346 },
];

/**
 * How far right small print moves on the held-out decks of a corpus made with `heldOutPlaces`:
 * the training decks' regions (the boxes the policy is shown and crops) start at x 37-96 and
 * 337-396 (location bins 1-4 and 16-19 of 32), the held-out ones at 101-160 and 401-460 (bins 5-8
 * and 20-23), so that no training crop's box starts where a held-out one does: a box there must be
 * copied from the page, not remembered.
 */
export const HELD_OUT_PLACE_SHIFT_PX = 64;

export interface SmallPrintPlace {
  role: SmallPrintRole;
  x: number;
  baseline: number;
  fontPx: number;
}

/** `count` regions (1-3) of distinct roles at distinct places, seeded. */
export function drawSmallPrintPlaces(random: Random, count: number): SmallPrintPlace[] {
  const roles = shuffled(random, SMALL_PRINT_ROLE_NAMES);
  const slots = shuffled(random, SLOTS);
  return roles.slice(0, count).map((role, i) => ({
    role,
    x: slots[i]!.x + random.nextInt(60),
    baseline: slots[i]!.baseline + random.nextInt(12),
    fontPx: SMALL_PRINT_SIZES_PX[random.nextInt(SMALL_PRINT_SIZES_PX.length)]!,
  }));
}

function shuffled<T>(random: Random, items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = random.nextInt(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The region the policy is shown for a small-print line: its box with a margin of 3 px. */
export const REGION_MARGIN_PX = 3;

/** A year as the slides print one (1900-2099): what tells a dated figure's line from another. */
export const YEAR = /\b(?:19|20)\d\d\b/;

/**
 * The keyword rule (a crop baseline, docs/train.md#baselines), reading the page: the role that the
 * page's pointer line for the question's attribute names (`Revenue 2003: see source` for "What was
 * the revenue of X in 2003?": its words, the year when both have one); null when no line points.
 */
export function pointedRole(question: string, page: string): SmallPrintRole | null {
  const asked = question.toLowerCase();
  const askedYear = YEAR.exec(asked)?.[0];
  for (const line of page.split('\n')) {
    const at = line.indexOf(': see ');
    if (at <= 0) continue;
    const label = line.slice(0, at).trim().toLowerCase();
    const year = YEAR.exec(label)?.[0];
    // The first 11 letters: "headquarters" is asked as "headquartered".
    const words = label.replace(YEAR, '').trim().slice(0, 11);
    if (words === '' || !asked.includes(words) || (year && askedYear && year !== askedYear)) continue;
    const role = line
      .slice(at + ': see '.length)
      .trim()
      .toLowerCase();
    if ((SMALL_PRINT_ROLE_NAMES as readonly string[]).includes(role)) return role as SmallPrintRole;
  }
  return null;
}
