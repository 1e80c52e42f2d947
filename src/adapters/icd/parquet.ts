import { parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { type IcdParseOptions, parseIcdRecords } from '../../core/icd/parse';
import type { IcdQueryRecord } from '../../core/icd/types';

/** Parquet integers may come back as bigint; every ICD field is a safe integer or a float. */
const plain = (rows: unknown) =>
  JSON.parse(
    JSON.stringify(rows, (_key, value: unknown) => (typeof value === 'bigint' ? Number(value) : value)),
  ) as unknown;

/**
 * ICD records from a Parquet file (the layout of the JSON records: `query_id`,
 * `candidate_pool_indices` or `candidate_pool_ids`, `pointer_candidates` as a list of structs),
 * checked like the JSON ones: a bad row is a DatasetValidationError naming it and the field (a
 * null in a struct is an absent field, so a file without `gen_method` is refused, not read as beam).
 */
export async function readIcdParquet(
  bytes: Uint8Array,
  options: IcdParseOptions = {},
): Promise<IcdQueryRecord[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  return parseIcdRecords(plain(await parquetReadObjects({ file })), options);
}

/** ICD records as Parquet, nested columns as lists and structs (what `readIcdParquet` and pandas/pyarrow read). */
export function writeIcdParquet(records: readonly IcdQueryRecord[]): Uint8Array {
  const column = <K extends keyof IcdQueryRecord>(name: K) => ({
    name,
    data: records.map((r) => r[name]) as unknown as never[],
  });
  const trajectories = records.map((r) =>
    r.pointer_candidates.map((t) => ({
      pointer: t.pointer,
      // Every struct has the same fields (the writer infers one schema); a missing one is null.
      pointer_global: t.pointer_global ?? null,
      vqa_correct: t.vqa_correct,
      vqa_acc_score: t.vqa_acc_score,
      gen_method: t.gen_method,
    })),
  );
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: [
        column('query_id'),
        column('candidate_pool_indices'),
        { name: 'pointer_candidates', data: trajectories as unknown as never[] },
      ],
    }),
  );
}
