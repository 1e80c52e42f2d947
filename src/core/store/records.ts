import { InvalidArgumentError } from '../errors';
import type { StoreQuery, StoreRecord, StoreRecordKind } from '../../ports/store';

export const STORE_RECORD_KINDS: readonly StoreRecordKind[] = [
  'trajectory',
  'reward',
  'metric',
  'event',
  'checkpoint',
];

/** Run ids name folders and files: letters, digits, dot, dash, underscore. */
export const RUN_ID_PATTERN = /^[\w.-]+$/;

export function matchesQuery(record: StoreRecord, query: StoreQuery): boolean {
  return (
    record.kind === query.kind &&
    record.runId === query.runId &&
    (query.step === undefined || record.step === query.step) &&
    (query.promptUid === undefined || record.promptUid === query.promptUid) &&
    (query.sampleId === undefined || record.sampleId === query.sampleId)
  );
}

export function checkRunId(runId: unknown, argument = 'runId'): asserts runId is string {
  // A folder name: at most 200 characters, under the file systems' 255-byte limit.
  if (
    typeof runId !== 'string' ||
    !RUN_ID_PATTERN.test(runId) ||
    runId === '.' ||
    runId === '..' ||
    runId.length > 200
  ) {
    throw new InvalidArgumentError({
      argument,
      message: `must be 1 to 200 letters, digits, dots, dashes or underscores, got ${JSON.stringify(typeof runId === 'string' && runId.length > 60 ? `${runId.slice(0, 60)}...` : runId)}`,
    });
  }
}

/** Validates records before anything is written, so a bad batch writes nothing. */
export function checkStoreRecords(records: readonly StoreRecord[]): void {
  if (!Array.isArray(records))
    throw new InvalidArgumentError({ argument: 'records', message: 'expected an array of store records' });
  records.forEach((record, i) => {
    if (!STORE_RECORD_KINDS.includes(record?.kind))
      throw new InvalidArgumentError({
        argument: `records[${i}].kind`,
        message: `must be one of ${STORE_RECORD_KINDS.join(', ')}`,
      });
    checkRunId(record.runId, `records[${i}].runId`);
    if (!(Number.isInteger(record.step) && record.step >= 0))
      throw new InvalidArgumentError({
        argument: `records[${i}].step`,
        message: `must be an integer >= 0, got ${String(record.step)}`,
      });
    if (!Number.isFinite(record.time))
      throw new InvalidArgumentError({
        argument: `records[${i}].time`,
        message: 'must be a timestamp in milliseconds',
      });
  });
}

/** Blob keys may have folders (`checkpoints/step-10/weights.bin`) but never climb out of the run. */
export function checkBlobKey(key: unknown): asserts key is string {
  if (
    typeof key !== 'string' ||
    key.length === 0 ||
    key.startsWith('/') ||
    key.split(/[\\/]/).some((part) => part === '..' || part === '')
  ) {
    throw new InvalidArgumentError({
      argument: 'key',
      message: `must be a relative path without '..', got ${JSON.stringify(key)}`,
    });
  }
}

/** Validates a query: known kind, safe run id, integer step, `limit` an integer >= 0. */
export function checkStoreQuery(query: StoreQuery): void {
  if (typeof query !== 'object' || query === null)
    throw new InvalidArgumentError({
      argument: 'query',
      message: 'expected {kind, runId, step?, promptUid?, sampleId?, limit?}',
    });
  if (!STORE_RECORD_KINDS.includes(query.kind))
    throw new InvalidArgumentError({
      argument: 'query.kind',
      message: `must be one of ${STORE_RECORD_KINDS.join(', ')}`,
    });
  checkRunId(query.runId, 'query.runId');
  if (query.step !== undefined && !(Number.isInteger(query.step) && query.step >= 0))
    throw new InvalidArgumentError({
      argument: 'query.step',
      message: `must be an integer >= 0, got ${String(query.step)}`,
    });
  if (query.limit !== undefined && !(Number.isInteger(query.limit) && query.limit >= 0))
    throw new InvalidArgumentError({
      argument: 'query.limit',
      message: `must be an integer >= 0, got ${String(query.limit)}`,
    });
}

/** The kinds of records a step writes, which a resumed run writes again for the steps it repeats. */
// Events too: the unified log's step events of an interrupted attempt are superseded with its records.
export const SUPERSEDABLE_KINDS = [
  'trajectory',
  'reward',
  'metric',
  'event',
] as const satisfies readonly StoreRecordKind[];

/** Per kind, per step: how many of the step's first records (in append order) an attempt left and a later one replaced. */
export type SupersededCounts = Partial<Record<(typeof SUPERSEDABLE_KINDS)[number], Record<string, number>>>;

/**
 * The records of the latest attempt: a trainer that resumes or restarts writes an event whose
 * `superseded` counts, per kind and step, the records an interrupted attempt left for the steps it
 * runs again; those come first in append order and are dropped here. Counts are totals at the time
 * of each event, so the largest over all events is the number superseded.
 */
export function currentRecords(
  records: readonly StoreRecord[],
  events: readonly StoreRecord[],
): StoreRecord[] {
  const drop = new Map<string, number>();
  for (const event of events) {
    const superseded = (event.data as { superseded?: SupersededCounts } | null)?.superseded;
    if (!superseded) continue;
    for (const [kind, perStep] of Object.entries(superseded)) {
      for (const [step, count] of Object.entries(perStep ?? {})) {
        const key = `${kind}|${step}`;
        drop.set(key, Math.max(drop.get(key) ?? 0, count));
      }
    }
  }
  const seen = new Map<string, number>();
  return records.filter((record) => {
    const key = `${record.kind}|${record.step}`;
    const index = seen.get(key) ?? 0;
    seen.set(key, index + 1);
    return index >= (drop.get(key) ?? 0);
  });
}
