import type { KvCacheRow, KvCacheShape } from '../../../rollout-engine/kv-cache';

/**
 * The last decode batch's caches side by side, [rows, kvHeads, capacity, headDim] per layer, fed to
 * the decode graph as its past as they are: while the same rows decode together (a turn's steps)
 * nothing is gathered, only each step's new keys and values are written in (a gather of every
 * row's cache per step took about 40% of a 16-row decode step on SmolLM2). Slots past a row's own
 * cache are masked. Another set of rows, or rows whose caches changed elsewhere, gathers a new slab
 * from the rows' own caches, which every step updates too, so they stay complete.
 */
export interface KvSlab {
  rows: KvCacheRow[];
  /** Each row's cached tokens as the slab holds them. */
  lengths: number[];
  capacity: number;
  keys: Float32Array[];
  values: Float32Array[];
  /** Writes the new tokens' keys or values of one layer ([rows, kvHeads, length, headDim]) after each row's cache. */
  write(
    kind: 'keys' | 'values',
    layer: number,
    rows: readonly KvCacheRow[],
    data: Float32Array,
    length: number,
    added: readonly number[],
  ): void;
}

export function createKvSlabs(shape: KvCacheShape, maxPositions: number) {
  let slab: KvSlab | null = null;
  return {
    drop() {
      slab = null;
    },
    /** The slab for these rows with room for `needed` tokens per row: the last one when it still fits. */
    slabFor(rows: readonly KvCacheRow[], needed: number): KvSlab {
      const last = slab;
      if (
        last &&
        last.capacity >= needed &&
        last.rows.length === rows.length &&
        rows.every((r, i) => last.rows[i] === r && last.lengths[i] === r.cached)
      )
        return last;
      const capacity = Math.min(
        Math.max(64, 2 ** Math.ceil(Math.log2(needed))),
        Math.max(needed, maxPositions),
      );
      const made = makeSlab(rows, capacity, shape);
      slab = made;
      return made;
    },
  };
}

/**
 * A slab for these rows, their caches gathered in. Made outside `slabFor`'s scope on purpose: a
 * closure made there (`write`) would share its context with the previous slab (`last`), and every
 * slab would keep the one before it alive (a 16-row SmolLM2 rollout leaked about 16 MB a decode
 * step that way).
 */
function makeSlab(rows: readonly KvCacheRow[], capacity: number, shape: KvCacheShape): KvSlab {
  const { layers, heads, headWidth: hd } = shape;
  const size = rows.length * heads * capacity * hd;
  const made: KvSlab = {
    rows: [...rows],
    lengths: rows.map((r) => r.cached),
    capacity,
    keys: Array.from({ length: layers }, () => new Float32Array(size)),
    values: Array.from({ length: layers }, () => new Float32Array(size)),
    write(kind, layer, writtenRows, data, length, added) {
      const into = made[kind][layer]!;
      writtenRows.forEach((r, i) => {
        for (let head = 0; head < heads; head++) {
          const from = (i * heads + head) * length * hd;
          into.set(
            data.subarray(from, from + added[i]! * hd),
            ((i * heads + head) * capacity + r.cached) * hd,
          );
        }
      });
    },
  };
  for (let l = 0; l < layers; l++)
    rows.forEach((r, i) => {
      for (let head = 0; head < heads; head++) {
        const from = head * r.capacity * hd;
        const to = (i * heads + head) * capacity * hd;
        made.keys[l]!.set(r.keys[l]!.subarray(from, from + r.cached * hd), to);
        made.values[l]!.set(r.values[l]!.subarray(from, from + r.cached * hd), to);
      }
    });
  return made;
}
