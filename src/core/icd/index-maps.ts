import { DatasetValidationError, InvalidArgumentError } from '../errors';
import {
  checkIndexList,
  checkLocalPointer,
  checkPointerGlobal,
  checkShots,
  checkTrajectoryScalars,
  isAbsent,
  trajectoryError,
} from './check';
import { DEFAULT_ICD_SETTINGS, type IcdQueryRecord } from './types';

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
 * trajectory; a global index beyond the embedding table says to check data consistency. The other
 * fields are checked as `parseIcdRecords` checks them: a query id given twice, a pool with a
 * repeated index, a pointer of another length than `shots` or showing a candidate twice, a
 * `pointer_global` that disagrees with the pool, `vqa_correct` that is not 0/1 or disagrees with
 * the accuracy, an unknown `gen_method`.
 */
export function validateIcdRecords(
  records: readonly IcdQueryRecord[],
  options: { poolSize: number; embeddingCount?: number; shots?: number },
): void {
  const shots = checkShots(options.shots ?? DEFAULT_ICD_SETTINGS.shots);
  const firstRow = new Map<number, number>();
  records.forEach((record, row) => {
    if (typeof record !== 'object' || record === null)
      throw new DatasetValidationError({ row, field: '(record)', message: 'expected an object' });
    const queryId = record.query_id;
    if (!(Number.isSafeInteger(queryId) && queryId >= 0))
      throw new DatasetValidationError({
        row,
        field: 'query_id',
        message: `expected an integer >= 0, got ${String(queryId)}`,
      });
    const first = firstRow.get(queryId);
    if (first !== undefined)
      throw new DatasetValidationError({
        row,
        field: 'query_id',
        message: `query ${queryId} appears twice (first at row ${first}); give each query one record`,
      });
    firstRow.set(queryId, row);
    const pool = record.candidate_pool_indices;
    if (!Array.isArray(pool) || pool.length !== options.poolSize) {
      throw new DatasetValidationError({
        row,
        field: 'candidate_pool_indices',
        message: `query ${queryId}: pool size ${Array.isArray(pool) ? pool.length : 'none'} != ${options.poolSize} (expected_pool_size)`,
      });
    }
    const seen = new Set<number>();
    pool.forEach((g, i) => {
      if (!Number.isSafeInteger(g) || g < 0)
        throw new DatasetValidationError({
          row,
          field: `candidate_pool_indices.${i}`,
          message: `query ${queryId}: global index ${String(g)} is not an integer >= 0`,
        });
      if (options.embeddingCount !== undefined && g >= options.embeddingCount) {
        throw new DatasetValidationError({
          row,
          field: `candidate_pool_indices.${i}`,
          message: `query ${queryId}: global index ${g} is beyond the embedding table (${options.embeddingCount} rows); check that the RL data and the embeddings come from the same dataset`,
        });
      }
      if (seen.has(g))
        throw new DatasetValidationError({
          row,
          field: `candidate_pool_indices.${i}`,
          message: `query ${queryId}: global index ${g} appears twice in the pool`,
        });
      seen.add(g);
    });
    if (!Array.isArray(record.pointer_candidates))
      throw new DatasetValidationError({ row, field: 'pointer_candidates', message: 'expected an array' });
    record.pointer_candidates.forEach((trajectory, t) => {
      const place = { row, queryId, t };
      if (typeof trajectory !== 'object' || trajectory === null)
        throw trajectoryError(place, '(trajectory)', 'expected an object');
      const method = (trajectory as { gen_method?: unknown }).gen_method;
      const pointer = checkLocalPointer(trajectory.pointer, pool, shots, {
        ...place,
        detail: `(${String(method)}, pointer [${Array.isArray(trajectory.pointer) ? trajectory.pointer.join(', ') : '?'}])`,
      });
      if (!isAbsent(trajectory.pointer_global))
        checkPointerGlobal(
          pointer,
          pool,
          checkIndexList(trajectory.pointer_global, shots, place, 'pointer_global'),
          place,
        );
      checkTrajectoryScalars(trajectory as unknown as Record<string, unknown>, place);
    });
  });
}

/** The pointer in global indices. */
export function pointerToGlobal(pointer: readonly number[], pool: readonly number[]): number[] {
  return pointer.map((p) => localToGlobal(p, pool));
}
