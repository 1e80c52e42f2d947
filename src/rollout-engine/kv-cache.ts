/**
 * Per-rollout key/value caches of an in-process transformer backend (tfjs, ONNX Runtime), kept
 * in plain arrays between forwards: per layer, keys and values laid out [heads, capacity, headWidth].
 * A batched forward gathers the rows' caches into [rows, heads, past, headWidth] tensors and
 * scatters the new tokens' keys/values back.
 */
export interface KvCacheRow {
  /** Tokens whose keys/values are in the cache. */
  cached: number;
  keys: Float32Array[];
  values: Float32Array[];
  capacity: number;
}

/** The sizes the cache layout depends on. */
export interface KvCacheShape {
  contextLength: number;
  layers: number;
  heads: number;
  headWidth: number;
}

export function emptyKvCache(shape: KvCacheShape): Pick<KvCacheRow, 'keys' | 'values' | 'capacity'> {
  return {
    keys: Array.from({ length: shape.layers }, () => new Float32Array(0)),
    values: Array.from({ length: shape.layers }, () => new Float32Array(0)),
    capacity: 0,
  };
}

/** Makes room for `needed` cached tokens; doubling keeps the copying amortised, the context bounds it. */
export function growKvCache(row: KvCacheRow, needed: number, shape: KvCacheShape): void {
  if (needed <= row.capacity) return;
  const { contextLength, layers, heads, headWidth } = shape;
  const capacity = Math.min(contextLength, Math.max(needed, row.capacity * 2, 16));
  for (let layer = 0; layer < layers; layer++) {
    for (const cache of [row.keys, row.values]) {
      const grown = new Float32Array(heads * capacity * headWidth);
      const old = cache[layer]!;
      for (let head = 0; head < heads; head++) {
        grown.set(
          old.subarray(head * row.capacity * headWidth, (head * row.capacity + row.cached) * headWidth),
          head * capacity * headWidth,
        );
      }
      cache[layer] = grown;
    }
  }
  row.capacity = capacity;
}

/** One layer's cached keys (or values) of every row as [rows, heads, pastLength, headWidth]; positions past a row's own cache stay 0. */
export function gatherKvCache(
  rows: readonly KvCacheRow[],
  layer: number,
  kind: 'keys' | 'values',
  pastLength: number,
  shape: KvCacheShape,
): Float32Array {
  const { heads, headWidth } = shape;
  const out = new Float32Array(rows.length * heads * pastLength * headWidth);
  rows.forEach((r, index) => {
    const cache = r[kind][layer]!;
    for (let head = 0; head < heads; head++) {
      const from = head * r.capacity * headWidth;
      out.set(
        cache.subarray(from, from + r.cached * headWidth),
        (index * heads + head) * pastLength * headWidth,
      );
    }
  });
  return out;
}

/**
 * Appends the new tokens' keys (or values) of one layer to every row: row i's `added[i]` tokens are
 * read from `data` [rows, heads, sourceLength, headWidth] starting at `sourceOffset`. The caller
 * advances `cached` once every layer is stored.
 */
export function scatterKvCache(
  rows: readonly KvCacheRow[],
  layer: number,
  kind: 'keys' | 'values',
  data: Float32Array,
  source: { length: number; offset: number },
  added: readonly number[],
  shape: KvCacheShape,
): void {
  const { heads, headWidth } = shape;
  rows.forEach((r, index) => {
    growKvCache(r, r.cached + added[index]!, shape);
    const cache = r[kind][layer]!;
    for (let head = 0; head < heads; head++) {
      const from = ((index * heads + head) * source.length + source.offset) * headWidth;
      cache.set(
        data.subarray(from, from + added[index]! * headWidth),
        (head * r.capacity + r.cached) * headWidth,
      );
    }
  });
}
