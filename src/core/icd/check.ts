import { DatasetValidationError, InvalidArgumentError } from '../errors';
import { isVqaCorrect } from './vqa-accuracy';
import { ICD_GEN_METHODS, type IcdGenMethod } from './types';

/**
 * Where a trajectory sits, for errors: the row (record index, or line index in JSONL), the query,
 * the trajectory's index, and a prefix such as `line 4: ` when the row is a line of a file.
 */
export interface TrajectoryPlace {
  row: number;
  queryId: number;
  t: number;
  prefix?: string;
  /** Said after the trajectory's index, e.g. `(beam, pointer [3, 64])`. */
  detail?: string;
}

const shown = (value: unknown) => JSON.stringify(value)?.slice(0, 80) ?? String(value);
/** Null in a columnar file (Parquet) means absent, as undefined does in JSON. */
export const isAbsent = (value: unknown): value is null | undefined => value === undefined || value === null;

export function checkShots(shots: number): number {
  if (!(Number.isInteger(shots) && shots >= 1))
    throw new InvalidArgumentError({
      argument: 'shots',
      message: `must be an integer >= 1, got ${String(shots)}`,
    });
  return shots;
}

/** The error for one field of a trajectory, naming the row, the query and the trajectory. */
export function trajectoryError(
  place: TrajectoryPlace,
  field: string,
  message: string,
): DatasetValidationError {
  return new DatasetValidationError({
    row: place.row,
    field: `pointer_candidates.${place.t}.${field}`,
    message: `${place.prefix ?? ''}query ${place.queryId}, trajectory ${place.t}${place.detail ? ` ${place.detail}` : ''}: ${message}`,
  });
}

/** `shots` distinct non-negative safe integers (a pointer or pointer_global before its range is known). */
export function checkIndexList(
  value: unknown,
  shots: number,
  place: TrajectoryPlace,
  field: string,
): number[] {
  if (!Array.isArray(value) || !value.every((v) => Number.isSafeInteger(v) && (v as number) >= 0))
    throw trajectoryError(place, field, `expected an array of integers >= 0, got ${shown(value)}`);
  if (value.length !== shots)
    throw trajectoryError(
      place,
      field,
      `expected ${shots} indices (one per shot), got ${value.length}: ${shown(value)}`,
    );
  return value as number[];
}

/** A pointer of local indices: each in [0, pool length) (error rule 2), no candidate twice. */
export function checkLocalPointer(
  value: unknown,
  pool: readonly number[],
  shots: number,
  place: TrajectoryPlace,
): number[] {
  const pointer = checkIndexList(value, shots, place, 'pointer');
  const at = { ...place, detail: place.detail ?? `(pointer [${pointer.join(', ')}])` };
  pointer.forEach((p, k) => {
    if (p >= pool.length)
      throw trajectoryError(
        at,
        `pointer.${k}`,
        `index ${p} is outside [0, ${pool.length - 1}]; pointer holds local indices (positions in the query's pool of ${pool.length}); if your file's pointers are global indices, write them as pointer_global instead`,
      );
  });
  const globals = pointer.map((p) => pool[p]);
  if (new Set(globals).size !== pointer.length)
    throw trajectoryError(at, 'pointer', `global [${globals.join(', ')}]: the same candidate twice`);
  return pointer;
}

/** `pointer_global` says the same candidates as the pointer: `pool[pointer[k]]` is `pointer_global[k]`. */
export function checkPointerGlobal(
  pointer: readonly number[],
  pool: readonly number[],
  pointerGlobal: readonly number[],
  place: TrajectoryPlace,
): void {
  const mapped = pointer.map((p) => pool[p]);
  if (mapped.some((g, k) => g !== pointerGlobal[k]))
    throw trajectoryError(
      place,
      'pointer_global',
      `pointer [${pointer.join(', ')}] maps to [${mapped.join(', ')}] through the pool, not to pointer_global [${pointerGlobal.join(', ')}]`,
    );
}

/** The scalar fields of a trajectory: `vqa_acc_score`, `vqa_correct` (derived when absent) and `gen_method`. */
export function checkTrajectoryScalars(
  c: Readonly<Record<string, unknown>>,
  place: TrajectoryPlace,
): { vqa_correct: 0 | 1; vqa_acc_score: number; gen_method: IcdGenMethod } {
  const score = c.vqa_acc_score;
  if (typeof score !== 'number' || !(score >= 0 && score <= 1))
    throw trajectoryError(place, 'vqa_acc_score', `expected a number in [0, 1], got ${shown(score)}`);
  const expected = isVqaCorrect(score);
  const correct = c.vqa_correct;
  if (!isAbsent(correct)) {
    if (correct !== 0 && correct !== 1)
      throw trajectoryError(place, 'vqa_correct', `expected 0 or 1, got ${shown(correct)}`);
    if (correct !== expected)
      throw trajectoryError(
        place,
        'vqa_correct',
        `vqa_correct ${correct} disagrees with vqa_acc_score ${score} (correct means accuracy > 0); fix one of them`,
      );
  }
  const method = c.gen_method;
  if (!ICD_GEN_METHODS.includes(method as IcdGenMethod))
    throw trajectoryError(
      place,
      'gen_method',
      `expected one of ${ICD_GEN_METHODS.join(', ')}, got ${isAbsent(method) ? 'none' : shown(method)}`,
    );
  return { vqa_correct: expected, vqa_acc_score: score, gen_method: method as IcdGenMethod };
}

/** What is wrong with a query's embedding (undefined when nothing is): missing, another length, not finite. */
export function queryEmbeddingProblem(
  vector: unknown,
  dimensions: number,
  queryId: number,
): string | undefined {
  const arrayLike = Array.isArray(vector) || (ArrayBuffer.isView(vector) && !(vector instanceof DataView));
  if (!arrayLike)
    return `query ${queryId} has no query embedding (got ${vector === undefined ? 'undefined' : shown(vector)}); give one for every query_id in the data`;
  const v = vector as ArrayLike<unknown>;
  if (v.length !== dimensions)
    return `query ${queryId}'s embedding has ${v.length} numbers, the candidates' ${dimensions}`;
  for (let k = 0; k < v.length; k++)
    if (typeof v[k] !== 'number' || !Number.isFinite(v[k]))
      return `query ${queryId}'s embedding holds ${shown(v[k])} at ${k}, not a finite number`;
  return undefined;
}
