import { DatasetValidationError, InvalidArgumentError } from '../errors';
import type { IcdQueryRecord } from './types';

/**
 * Local index (position in the query's pool) -> global index (row of the embedding table):
 * `pool[local]` (docs/method.md#candidate-pools).
 */
export function localToGlobal(local: number, pool: readonly number[]): number {
  if (!Number.isInteger(local) || local < 0 || local >= pool.length) {
    throw new InvalidArgumentError({
      argument: 'local',
      message: `local index ${String(local)} is outside the pool of ${pool.length} candidates (valid: 0..${pool.length - 1})`,
    });
  }
  return pool[local]!;
}

/** Global index -> its position in the pool; a global index not in the pool is an error, never -1. */
export function globalToLocal(global: number, pool: readonly number[]): number {
  const local = pool.indexOf(global);
  if (local < 0)
    throw new InvalidArgumentError({
      argument: 'global',
      message: `global index ${String(global)} is not in the candidate pool (${pool.length} candidates)`,
    });
  return local;
}

/**
 * The seed's error rules, checked on normalised records (docs/method.md#correctness-properties):
 * a pool of another size names the query and the size; a pointer out of range names the
 * trajectory; a global index beyond the embedding table says to check data consistency. A pool
 * with a repeated index, or a `pointer_global` that disagrees with the pool, is rejected too.
 */
export function validateIcdRecords(
  records: readonly IcdQueryRecord[],
  options: { poolSize: number; embeddingCount?: number },
): void {
  records.forEach((record, row) => {
    const pool = record.candidate_pool_indices;
    if (pool.length !== options.poolSize) {
      throw new DatasetValidationError({
        row,
        field: 'candidate_pool_indices',
        message: `query ${record.query_id}: pool size ${pool.length} != ${options.poolSize} (expected_pool_size)`,
      });
    }
    const seen = new Set<number>();
    pool.forEach((g, i) => {
      if (!Number.isInteger(g) || g < 0)
        throw new DatasetValidationError({
          row,
          field: `candidate_pool_indices.${i}`,
          message: `query ${record.query_id}: global index ${String(g)} is not an integer >= 0`,
        });
      if (options.embeddingCount !== undefined && g >= options.embeddingCount) {
        throw new DatasetValidationError({
          row,
          field: `candidate_pool_indices.${i}`,
          message: `query ${record.query_id}: global index ${g} is beyond the embedding table (${options.embeddingCount} rows); check that the RL data and the embeddings come from the same dataset`,
        });
      }
      if (seen.has(g))
        throw new DatasetValidationError({
          row,
          field: `candidate_pool_indices.${i}`,
          message: `query ${record.query_id}: global index ${g} appears twice in the pool`,
        });
      seen.add(g);
    });
    record.pointer_candidates.forEach((trajectory, t) => {
      trajectory.pointer.forEach((p, k) => {
        if (!Number.isInteger(p) || p < 0 || p >= pool.length) {
          throw new DatasetValidationError({
            row,
            field: `pointer_candidates.${t}.pointer.${k}`,
            message: `query ${record.query_id}, trajectory ${t} (${trajectory.gen_method}, pointer [${trajectory.pointer.join(', ')}]): index ${String(p)} is outside [0, ${pool.length - 1}]`,
          });
        }
      });
      if (trajectory.pointer_global) {
        const mapped = trajectory.pointer.map((p) => pool[p]);
        if (mapped.some((g, k) => g !== trajectory.pointer_global![k])) {
          throw new DatasetValidationError({
            row,
            field: `pointer_candidates.${t}.pointer_global`,
            message: `query ${record.query_id}, trajectory ${t}: pointer [${trajectory.pointer.join(', ')}] maps to [${mapped.join(', ')}] through the pool, not to pointer_global [${trajectory.pointer_global.join(', ')}]`,
          });
        }
      }
    });
  });
}

/** The pointer in global indices. */
export function pointerToGlobal(pointer: readonly number[], pool: readonly number[]): number[] {
  return pointer.map((p) => localToGlobal(p, pool));
}
