import { InvalidArgumentError } from '../errors';

/** An embedding table: `rows` vectors of `dimensions` numbers, row-major, L2-normalised rows. */
export interface EmbeddingTable {
  readonly rows: number;
  readonly dimensions: number;
  readonly data: Float32Array;
}

/** v / |v| (a zero vector stays zero). */
export function l2Normalise(vector: ArrayLike<number>): Float32Array {
  let norm = 0;
  for (let i = 0; i < vector.length; i++) norm += vector[i]! * vector[i]!;
  norm = Math.sqrt(norm);
  const out = new Float32Array(vector.length);
  if (norm === 0) return out;
  for (let i = 0; i < vector.length; i++) out[i] = vector[i]! / norm;
  return out;
}

/** A table from vectors, each L2-normalised (docs/method.md#candidate-pools): cosine is then a dot product. */
export function createEmbeddingTable(vectors: readonly ArrayLike<number>[]): EmbeddingTable {
  if (!Array.isArray(vectors))
    throw new InvalidArgumentError({
      argument: 'vectors',
      message: 'expected an array of vectors (one array of numbers per global index)',
    });
  const isVector = (v: unknown) => Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView));
  const dimensions = isVector(vectors[0]) ? vectors[0]!.length : 0;
  const data = new Float32Array(vectors.length * dimensions);
  vectors.forEach((v, i) => {
    if (!isVector(v))
      throw new InvalidArgumentError({ argument: `vectors[${i}]`, message: 'is not an array of numbers' });
    if (v.length !== dimensions)
      throw new InvalidArgumentError({
        argument: `vectors[${i}]`,
        message: `has ${v.length} numbers, the first vector has ${dimensions}`,
      });
    for (let k = 0; k < dimensions; k++)
      if (typeof v[k] !== 'number' || !Number.isFinite(v[k]!))
        throw new InvalidArgumentError({
          argument: `vectors[${i}][${k}]`,
          message: 'must be a finite number',
        });
    data.set(l2Normalise(v), i * dimensions);
  });
  return { rows: vectors.length, dimensions, data };
}

/**
 * Row `index` of the table (a view, not a copy); an index outside the table is an
 * `InvalidArgumentError`.
 */
export function embeddingRow(table: EmbeddingTable, index: number): Float32Array {
  if (!Number.isInteger(index) || index < 0 || index >= table.rows) {
    throw new InvalidArgumentError({
      argument: 'index',
      message: `global index ${String(index)} is beyond the embedding table (${table.rows} rows); check that the RL data and the embeddings come from the same dataset`,
    });
  }
  return table.data.subarray(index * table.dimensions, (index + 1) * table.dimensions);
}

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

/** Cosine similarity of `query` (normalised here) with every row of the table. */
export function similarities(table: EmbeddingTable, query: ArrayLike<number>): Float32Array {
  const q = l2Normalise(query);
  const out = new Float32Array(table.rows);
  for (let r = 0; r < table.rows; r++) out[r] = dot(q, embeddingRow(table, r));
  return out;
}

/** Indices of the `k` largest scores, best first; ties by lower index (deterministic). */
export function topK(
  scores: ArrayLike<number>,
  k: number,
  exclude: ReadonlySet<number> = new Set(),
): number[] {
  const order: number[] = [];
  for (let i = 0; i < scores.length; i++) if (!exclude.has(i)) order.push(i);
  order.sort((a, b) => scores[b]! - scores[a]! || a - b);
  return order.slice(0, Math.max(0, k));
}
