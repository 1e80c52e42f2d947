import { DatasetValidationError } from '../errors';
import { decodeUtf8Text, parseJsonlRows } from '../text-data';
import { isVqaCorrect } from './vqa-accuracy';
import { ICD_GEN_METHODS, type IcdGenMethod, type IcdQueryRecord, type IcdTrajectory } from './types';

/**
 * Reads ICD RL data as found in files: an array of records, or an object keyed by query id (the
 * seed's `rl_data.items()`). The pool is `candidate_pool_indices`, or `candidate_pool_ids` (files
 * in the wild); pools of any length are accepted here (normalise them to K afterwards).
 * Pointers are local when `pointer_global` is present; without it, a pointer whose indices all lie
 * in [0, pool length) is local, and one that does not is read as global indices of the pool's
 * members and mapped to local ones (docs/method.md#candidate-pools).
 */
export function parseIcdRecords(input: unknown): IcdQueryRecord[] {
  const rows: Array<[string | undefined, unknown]> = Array.isArray(input)
    ? input.map((r) => [undefined, r])
    : typeof input === 'object' && input !== null
      ? Object.entries(input as Record<string, unknown>)
      : [];
  if (!Array.isArray(input) && (typeof input !== 'object' || input === null))
    throw new DatasetValidationError({
      row: -1,
      field: '(root)',
      message: 'expected an array of query records or an object keyed by query id',
    });
  return rows.map(([key, value], row) => parseRecord(value, row, key));
}

function integers(value: unknown, row: number, field: string): number[] {
  if (!Array.isArray(value) || !value.every((v) => Number.isInteger(v)))
    throw new DatasetValidationError({
      row,
      field,
      message: `expected an array of integers, got ${JSON.stringify(value)?.slice(0, 80)}`,
    });
  return value as number[];
}

function parseRecord(value: unknown, row: number, key: string | undefined): IcdQueryRecord {
  if (typeof value !== 'object' || value === null)
    throw new DatasetValidationError({ row, field: '(record)', message: 'expected an object' });
  const r = value as Record<string, unknown>;
  const rawId = r.query_id ?? key;
  const queryId = typeof rawId === 'string' && /^\d+$/.test(rawId) ? Number(rawId) : rawId;
  if (!Number.isInteger(queryId))
    throw new DatasetValidationError({
      row,
      field: 'query_id',
      message: `expected an integer, got ${JSON.stringify(rawId)}`,
    });
  const poolField = r.candidate_pool_indices !== undefined ? 'candidate_pool_indices' : 'candidate_pool_ids';
  const pool = integers(r[poolField], row, poolField);
  const candidates = r.pointer_candidates ?? [];
  if (!Array.isArray(candidates))
    throw new DatasetValidationError({ row, field: 'pointer_candidates', message: 'expected an array' });
  const trajectories = candidates.map((c: unknown, t) => parseTrajectory(c, pool, row, t, queryId as number));
  return { query_id: queryId as number, candidate_pool_indices: [...pool], pointer_candidates: trajectories };
}

function parseTrajectory(
  value: unknown,
  pool: readonly number[],
  row: number,
  t: number,
  queryId: number,
): IcdTrajectory {
  const field = (name: string) => `pointer_candidates.${t}.${name}`;
  if (typeof value !== 'object' || value === null)
    throw new DatasetValidationError({
      row,
      field: `pointer_candidates.${t}`,
      message: 'expected an object',
    });
  const c = value as Record<string, unknown>;
  let pointer = integers(c.pointer, row, field('pointer'));
  // Null in a columnar file (Parquet) means absent, as undefined does in JSON.
  const pointerGlobal =
    c.pointer_global === undefined || c.pointer_global === null
      ? undefined
      : integers(c.pointer_global, row, field('pointer_global'));
  if (!pointerGlobal && pointer.some((p) => p < 0 || p >= pool.length)) {
    pointer = pointer.map((g, k) => {
      const local = pool.indexOf(g);
      if (local < 0)
        throw new DatasetValidationError({
          row,
          field: `${field('pointer')}.${k}`,
          message: `query ${queryId}, trajectory ${t}: ${g} is neither a local index (pool of ${pool.length}) nor a global index in the pool`,
        });
      return local;
    });
  }
  const score = c.vqa_acc_score;
  if (typeof score !== 'number' || !(score >= 0 && score <= 1))
    throw new DatasetValidationError({
      row,
      field: field('vqa_acc_score'),
      message: `expected a number in [0, 1], got ${JSON.stringify(score)}`,
    });
  const method = c.gen_method ?? 'beam';
  if (!ICD_GEN_METHODS.includes(method as IcdGenMethod))
    throw new DatasetValidationError({
      row,
      field: field('gen_method'),
      message: `expected one of ${ICD_GEN_METHODS.join(', ')}, got ${JSON.stringify(method)}`,
    });
  const correct =
    c.vqa_correct === undefined ? isVqaCorrect(score) : c.vqa_correct === 1 || c.vqa_correct === true ? 1 : 0;
  return {
    pointer: [...pointer],
    ...(pointerGlobal && { pointer_global: [...pointerGlobal] }),
    vqa_correct: correct,
    vqa_acc_score: score,
    gen_method: method as IcdGenMethod,
  };
}

/**
 * Parses JSON (an array or an object keyed by query id) or JSONL (one record a line), from a
 * file's bytes (UTF-8, or a DatasetValidationError naming `source` and the line) or its text. A
 * byte-order mark and CRLF line ends are accepted; every JSONL line is an object.
 */
export function parseIcdText(
  input: string | Uint8Array,
  format: 'json' | 'jsonl',
  source?: string,
): IcdQueryRecord[] {
  const text = typeof input === 'string' ? input : decodeUtf8Text(input, source);
  if (format === 'json') {
    try {
      return parseIcdRecords(JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
    } catch (error) {
      if (error instanceof SyntaxError)
        throw new DatasetValidationError({
          row: -1,
          field: '(file)',
          message: `${source ?? 'the text'} is not valid JSON: ${error.message.slice(0, 200)}`,
          cause: error,
        });
      throw error;
    }
  }
  return parseIcdRecords(parseJsonlRows(text, source, { invalidJsonField: '(line)' }).map((r) => r.value));
}

/** JSONL of the records, one a line, with `pointer_global` filled in. */
export function formatIcdJsonl(records: readonly IcdQueryRecord[]): string {
  return records.map((r) => JSON.stringify(r)).join('\n') + (records.length ? '\n' : '');
}
