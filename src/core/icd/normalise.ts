import { DatasetValidationError } from '../errors';
import { queryEmbeddingProblem } from './check';
import { embeddingRow, similarities, topK, type EmbeddingTable } from './embeddings';
import { pointerToGlobal, validateIcdRecords } from './index-maps';
import { DEFAULT_ICD_SETTINGS, type IcdQueryRecord } from './types';

/** Options of `normaliseIcdPools`. */
export interface NormaliseOptions {
  /** K (default 64). */
  poolSize?: number;
  /** Shots per prompt: every pointer's length (default 2). */
  shots?: number;
  /** The candidates' embeddings, by global index. */
  table: EmbeddingTable;
  /** The query's embedding (for similarity to the query). */
  queryEmbedding: (queryId: number) => ArrayLike<number>;
  /** Global indices a query's pool must not receive (the query itself when it is in the table). */
  excluded?: (queryId: number) => readonly number[];
}

/** The records with pools of exactly K, and what changed per query. */
export interface NormaliseReport {
  records: IcdQueryRecord[];
  /** Per query: how many candidates were added (short pools), dropped (long pools) and merged (repeats). */
  changes: Array<{ queryId: number; added: number; dropped: number; merged: number }>;
}

/**
 * Brings raw pools of any length ("K not fixed") to exactly K (docs/method.md#candidate-pools):
 * a repeated index is merged into its first occurrence; a long pool keeps every candidate a
 * pointer uses, then the most query-similar others, in their original order; a short pool is
 * filled with the most query-similar rows of the table not in it. Every pointer is remapped,
 * `pointer_global` is written, and the result passes `validateIcdRecords`.
 */
export function normaliseIcdPools(
  raw: readonly IcdQueryRecord[],
  options: NormaliseOptions,
): NormaliseReport {
  const poolSize = options.poolSize ?? DEFAULT_ICD_SETTINGS.poolSize;
  const { table } = options;
  const changes: NormaliseReport['changes'] = [];
  const records = raw.map((record, row) => {
    const queryId = record.query_id;
    const oldPool = record.candidate_pool_indices;
    oldPool.forEach((g, i) => {
      if (!Number.isInteger(g) || g < 0 || g >= table.rows) {
        throw new DatasetValidationError({
          row,
          field: `candidate_pool_indices.${i}`,
          message: `query ${queryId}: global index ${String(g)} is beyond the embedding table (${table.rows} rows); check that the RL data and the embeddings come from the same dataset`,
        });
      }
    });
    const unique = [...new Set(oldPool)];
    const merged = oldPool.length - unique.length;
    const used = new Set(
      record.pointer_candidates.flatMap((t) =>
        t.pointer.map((p) => {
          const g = oldPool[p];
          if (g === undefined)
            throw new DatasetValidationError({
              row,
              field: 'pointer_candidates',
              message: `query ${queryId}: pointer index ${p} is outside the raw pool of ${oldPool.length}`,
            });
          return g;
        }),
      ),
    );
    if (used.size > poolSize)
      throw new DatasetValidationError({
        row,
        field: 'pointer_candidates',
        message: `query ${queryId}: pointers use ${used.size} distinct candidates, more than the pool size ${poolSize}`,
      });
    const query = options.queryEmbedding(queryId);
    const problem = queryEmbeddingProblem(query, table.dimensions, queryId);
    if (problem) throw new DatasetValidationError({ row, field: 'query_id', message: problem });
    const scores = similarities(table, query);
    let pool: number[];
    let added = 0;
    let dropped = 0;
    if (unique.length > poolSize) {
      const others = unique.filter((g) => !used.has(g)).sort((a, b) => scores[b]! - scores[a]! || a - b);
      const keep = new Set([...used, ...others.slice(0, poolSize - used.size)]);
      pool = unique.filter((g) => keep.has(g));
      dropped = unique.length - pool.length;
    } else {
      const exclude = new Set([...unique, ...(options.excluded?.(queryId) ?? [])]);
      const fill = topK(scores, poolSize - unique.length, exclude);
      if (unique.length + fill.length < poolSize)
        throw new DatasetValidationError({
          row,
          field: 'candidate_pool_indices',
          message: `query ${queryId}: the embedding table (${table.rows} rows) cannot fill a pool of ${poolSize}`,
        });
      pool = [...unique, ...fill];
      added = fill.length;
    }
    const local = new Map(pool.map((g, i) => [g, i]));
    const pointer_candidates = record.pointer_candidates.map((t) => {
      const pointer = t.pointer.map((p) => local.get(oldPool[p]!)!);
      return { ...t, pointer, pointer_global: pointerToGlobal(pointer, pool) };
    });
    changes.push({ queryId, added, dropped, merged });
    return { query_id: queryId, candidate_pool_indices: pool, pointer_candidates };
  });
  validateIcdRecords(records, {
    poolSize,
    embeddingCount: table.rows,
    ...(options.shots !== undefined && { shots: options.shots }),
  });
  return { records, changes };
}

/** The candidate embeddings of a pool, gathered by global index: K x d, row-major. */
export function gatherPoolEmbeddings(table: EmbeddingTable, pool: readonly number[]): Float32Array {
  const out = new Float32Array(pool.length * table.dimensions);
  pool.forEach((g, i) => out.set(embeddingRow(table, g), i * table.dimensions));
  return out;
}
