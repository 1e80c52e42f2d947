import type { Random } from '../../core/random';

// Where a slide's small print goes: one to three regions, each with a role that says what kind of
// fact it holds, at one of several places and sizes (src/env/slides/corpus.ts draws them).

/**
 * The roles of small-print regions, and the attributes each may hold: the question names an
 * attribute, the page names each region's role, so the region to crop follows from the question.
 */
export const SMALL_PRINT_ROLES = {
  source: ['revenue', 'market share'],
  footnote: ['employees', 'founded'],
  'contact line': ['headquarters', 'chief executive'],
} as const satisfies Record<string, readonly string[]>;

export type SmallPrintRole = keyof typeof SMALL_PRINT_ROLES;

export const SMALL_PRINT_ROLE_NAMES = Object.keys(SMALL_PRINT_ROLES) as SmallPrintRole[];

/** The role of the region that holds an attribute's small print. */
export function roleOfAttribute(attribute: string): SmallPrintRole | null {
  for (const role of SMALL_PRINT_ROLE_NAMES)
    if ((SMALL_PRINT_ROLES[role] as readonly string[]).includes(attribute)) return role;
  return null;
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

/**
 * The keyword rule (a crop baseline, docs/train.md#baselines): the role whose attribute the
 * question names, read off its words; null when it names none.
 */
export function keywordRole(question: string): SmallPrintRole | null {
  const words = question.toLowerCase();
  // The first 11 letters: "headquarters" is asked as "headquartered".
  for (const role of SMALL_PRINT_ROLE_NAMES)
    if ((SMALL_PRINT_ROLES[role] as readonly string[]).some((a) => words.includes(a.slice(0, 11))))
      return role;
  return null;
}
