import { InvalidArgumentError } from '../errors';

/** Options of `ndcgAtK`. */
export interface NdcgOptions {
  /**
   * `cutoff` (default): the ideal DCG puts min(|golden|, k) hits first.
   * `all-golden`: the reference implementation's variant (docs/method.md#ndcg), the ideal DCG counts every golden page even beyond k.
   */
  ideal?: 'cutoff' | 'all-golden';
}

/** The file name at the end of a path or URL (`/data/deck1_page3.png` -> `deck1_page3.png`). */
export function basename(path: string): string {
  const withoutQuery = path.split(/[?#]/, 1)[0] ?? path;
  const parts = withoutQuery.split(/[\\/]/);
  return parts[parts.length - 1] ?? withoutQuery;
}

/**
 * NDCG@k with binary relevance on image basenames. A retrieved page counts once, at its first
 * occurrence; DCG = sum rel_i / log2(i + 1) over ranks 1..k; `k` defaults to the number retrieved.
 * No golden pages or nothing retrieved gives 0.
 */
export function ndcgAtK(
  retrieved: readonly string[],
  golden: readonly string[],
  k?: number | null,
  options: NdcgOptions = {},
): number {
  if (!Array.isArray(retrieved))
    throw new InvalidArgumentError({ argument: 'retrieved', message: 'expected an array of basenames' });
  if (!Array.isArray(golden))
    throw new InvalidArgumentError({ argument: 'golden', message: 'expected an array of basenames' });
  const cutoff = k ?? retrieved.length;
  if (!(Number.isInteger(cutoff) && cutoff >= 0))
    throw new InvalidArgumentError({
      argument: 'k',
      message: `must be a non-negative integer, got ${String(k)}`,
    });
  const goldenSet = new Set(golden.map(basename));
  if (goldenSet.size === 0 || retrieved.length === 0 || cutoff === 0) return 0;

  const seen = new Set<string>();
  let dcg = 0;
  retrieved.slice(0, cutoff).forEach((item, index) => {
    const name = basename(item);
    if (seen.has(name)) return;
    seen.add(name);
    if (goldenSet.has(name)) dcg += 1 / Math.log2(index + 2);
  });
  const idealHits = options.ideal === 'all-golden' ? goldenSet.size : Math.min(goldenSet.size, cutoff);
  let idcg = 0;
  for (let rank = 0; rank < idealHits; rank++) idcg += 1 / Math.log2(rank + 2);
  return idcg > 0 ? dcg / idcg : 0;
}
