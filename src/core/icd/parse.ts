import { DatasetValidationError } from '../errors';
import {
  checkIndexList,
  checkLocalPointer,
  checkPointerGlobal,
  checkShots,
  checkTrajectoryScalars,
  isAbsent,
  trajectoryError,
  type TrajectoryPlace,
} from './check';
import { decodeUtf8Text, parseJsonlRows, parseJsonText } from '../text-data';
import { DEFAULT_ICD_SETTINGS, type IcdQueryRecord, type IcdTrajectory } from './types';

/** Options of the ICD record parsers. */
export interface IcdParseOptions {
  /** Shots per prompt: every pointer has this many indices (default 2, the seed's). */
  shots?: number;
  /** The file the text came from, named in errors. */
  source?: string;
}

/** One record of the input: its row (record index, or line index in JSONL) and the key it had. */
interface Row {
  value: unknown;
  row: number;
  key?: string;
  /** `line 4: ` for a line of a JSONL file. */
  prefix?: string;
}

/**
 * Reads ICD RL data as found in files: an array of records, or an object keyed by query id (the
 * seed's `rl_data.items()`). The pool is `candidate_pool_indices`, or `candidate_pool_ids` (files
 * in the wild); pools of any length are accepted here (normalise them to K afterwards).
 * Every field is checked, and a bad one is a DatasetValidationError naming the row and the field.
 * Local or global is said by the field, never guessed from the values (docs/method.md#candidate-pools):
 * `pointer` holds local indices (positions in the pool), `pointer_global` global ones; a
 * trajectory with only `pointer_global` is mapped to local indices; one with both must agree.
 */
export function parseIcdRecords(input: unknown, options: IcdParseOptions = {}): IcdQueryRecord[] {
  if (typeof input !== 'object' || input === null)
    throw new DatasetValidationError({
      row: -1,
      field: '(root)',
      message: 'expected an array of query records or an object keyed by query id',
    });
  const rows: Row[] = Array.isArray(input)
    ? input.map((value, row) => ({ value, row }))
    : Object.entries(input as Record<string, unknown>).map(([key, value], row) => ({ value, row, key }));
  return parseRows(rows, checkShots(options.shots ?? DEFAULT_ICD_SETTINGS.shots));
}

function parseRows(rows: readonly Row[], shots: number): IcdQueryRecord[] {
  const firstRow = new Map<number, number>();
  return rows.map((row) => {
    const record = parseRecord(row, shots);
    const first = firstRow.get(record.query_id);
    if (first !== undefined)
      throw new DatasetValidationError({
        row: row.row,
        field: 'query_id',
        message: `${row.prefix ?? ''}query ${record.query_id} appears twice (first at row ${first}); give each query one record`,
      });
    firstRow.set(record.query_id, row.row);
    return record;
  });
}

const shown = (value: unknown) => JSON.stringify(value)?.slice(0, 80) ?? String(value);

function parseRecord({ value, row, key, prefix = '' }: Row, shots: number): IcdQueryRecord {
  const fail = (field: string, message: string) =>
    new DatasetValidationError({ row, field, message: `${prefix}${message}` });
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw fail('(record)', `expected an object, got ${shown(value)}`);
  const r = value as Record<string, unknown>;
  if (key !== undefined && !/^\d+$/.test(key))
    throw fail('query_id', `the key '${key.slice(0, 40)}' is not a query id (an integer >= 0)`);
  const fromKey = key === undefined ? undefined : Number(key);
  const queryId = isAbsent(r.query_id) ? fromKey : r.query_id;
  if (!(Number.isSafeInteger(queryId) && (queryId as number) >= 0))
    throw fail('query_id', `expected an integer >= 0, got ${shown(queryId)}`);
  if (fromKey !== undefined && queryId !== fromKey)
    throw fail('query_id', `query_id ${String(queryId)} disagrees with its key '${key}'`);
  const id = queryId as number;
  const hasIndices = !isAbsent(r.candidate_pool_indices);
  const poolField = hasIndices ? 'candidate_pool_indices' : 'candidate_pool_ids';
  const pool = r[poolField];
  if (!Array.isArray(pool))
    throw fail(poolField, `query ${id}: expected an array of global indices, got ${shown(pool)}`);
  pool.forEach((g, i) => {
    if (!(Number.isSafeInteger(g) && (g as number) >= 0))
      throw fail(
        `${poolField}.${i}`,
        `query ${id}: expected a global index (an integer >= 0), got ${shown(g)}`,
      );
  });
  const ids = r.candidate_pool_ids;
  if (
    hasIndices &&
    !isAbsent(ids) &&
    !(Array.isArray(ids) && ids.length === pool.length && ids.every((g, i) => g === pool[i]))
  )
    throw fail(
      'candidate_pool_ids',
      `query ${id}: candidate_pool_ids and candidate_pool_indices differ; give one of them`,
    );
  const candidates = r.pointer_candidates;
  if (!Array.isArray(candidates))
    throw fail(
      'pointer_candidates',
      `query ${id}: expected an array of trajectories (possibly empty), got ${shown(candidates)}`,
    );
  const trajectories = candidates.map((c: unknown, t) =>
    parseTrajectory(c, pool as number[], shots, { row, queryId: id, t, prefix }),
  );
  return { query_id: id, candidate_pool_indices: [...(pool as number[])], pointer_candidates: trajectories };
}

function parseTrajectory(
  value: unknown,
  pool: readonly number[],
  shots: number,
  place: TrajectoryPlace,
): IcdTrajectory {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new DatasetValidationError({
      row: place.row,
      field: `pointer_candidates.${place.t}`,
      message: `${place.prefix ?? ''}query ${place.queryId}, trajectory ${place.t}: expected an object, got ${shown(value)}`,
    });
  const c = value as Record<string, unknown>;
  const pointerGlobal = isAbsent(c.pointer_global)
    ? undefined
    : checkIndexList(c.pointer_global, shots, place, 'pointer_global');
  let rawPointer: unknown = c.pointer;
  if (isAbsent(rawPointer)) {
    if (!pointerGlobal)
      throw trajectoryError(
        place,
        'pointer',
        'no pointer: give pointer (local indices: positions in the pool) or pointer_global (global indices)',
      );
    rawPointer = pointerGlobal.map((g, k) => {
      const local = pool.indexOf(g);
      if (local < 0)
        throw trajectoryError(
          place,
          `pointer_global.${k}`,
          `global index ${g} is not in the query's pool (${pool.length} candidates)`,
        );
      return local;
    });
  }
  const pointer = checkLocalPointer(rawPointer, pool, shots, place);
  if (pointerGlobal) checkPointerGlobal(pointer, pool, pointerGlobal, place);
  return {
    pointer: [...pointer],
    ...(pointerGlobal && { pointer_global: [...pointerGlobal] }),
    ...checkTrajectoryScalars(c, place),
  };
}

/**
 * Parses JSON (an array or an object keyed by query id) or JSONL (one record a line; a row is its
 * line), from a file's bytes (UTF-8, or a DatasetValidationError naming `options.source` and the
 * line) or its text. A byte-order mark and CRLF line ends are accepted.
 */
export function parseIcdText(
  input: string | Uint8Array,
  format: 'json' | 'jsonl',
  options: IcdParseOptions = {},
): IcdQueryRecord[] {
  const { source } = options;
  const text = typeof input === 'string' ? input : decodeUtf8Text(input, source);
  if (format === 'json') {
    return parseIcdRecords(parseJsonText(text, source), options);
  }
  const rows: Row[] = parseJsonlRows(text, source, { invalidJsonField: '(line)' }).map(({ line, value }) => ({
    value,
    row: line - 1,
    prefix: `${source ? `${source} ` : ''}line ${line}: `,
  }));
  return parseRows(rows, checkShots(options.shots ?? DEFAULT_ICD_SETTINGS.shots));
}

/** JSONL of the records, one a line, with `pointer_global` filled in. */
export function formatIcdJsonl(records: readonly IcdQueryRecord[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + (records.length ? '\n' : '');
}
