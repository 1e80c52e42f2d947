// The hostile ICD record files of bench/reliability/icd.ts: four valid raw records, 40 ways to
// break one field of one of them, and the four formats they are written in.
import { parquetWriteBuffer } from 'hyparquet-writer';

export type Json = Record<string, unknown>;
export type Format = 'json' | 'json-keyed' | 'jsonl' | 'parquet';
export const FORMATS: Format[] = ['json', 'json-keyed', 'jsonl', 'parquet'];

export const TABLE_ROWS = 60;
export const D = 6;
export const POOL = 8;
export const ROWS = 4;

/** Four valid raw records: pools of 8 (normalised to 16), two trajectories each. */
export function validRecords(): Json[] {
  return Array.from({ length: ROWS }, (_, r) => {
    const pool = Array.from({ length: POOL }, (_, i) => r * 10 + i);
    return {
      query_id: r,
      candidate_pool_indices: pool,
      pointer_candidates: [
        {
          pointer: [0, 1],
          pointer_global: [pool[0], pool[1]],
          vqa_correct: 1,
          vqa_acc_score: 1,
          gen_method: 'beam',
        },
        { pointer: [2, 3], vqa_correct: 0, vqa_acc_score: 0, gen_method: 'sample' },
      ],
    };
  });
}

export interface HostileCase {
  name: string;
  /** The field the error must name (trajectory fields are of `pointer_candidates.1`). */
  field: string;
  mutate: (record: Json) => Json | unknown;
  /** The formats that can hold the case (default: all). */
  formats?: Format[];
  /** Broken only by the embeddings given to the normaliser. */
  queryEmbedding?: (id: number) => unknown;
}

const trajectory =
  (over: Json, drop: string[] = []) =>
  (record: Json) => {
    const t: Json = { ...(record.pointer_candidates as Json[])[1], ...over };
    for (const key of drop) delete t[key];
    return { ...record, pointer_candidates: [(record.pointer_candidates as Json[])[0], t] };
  };
const T = 'pointer_candidates.1';

export const CASES: HostileCase[] = [
  { name: 'pointer missing (no pointer_global)', field: `${T}.pointer`, mutate: trajectory({}, ['pointer']) },
  { name: 'pointer not an array', field: `${T}.pointer`, mutate: trajectory({ pointer: 'x' }) },
  { name: 'pointer of 1', field: `${T}.pointer`, mutate: trajectory({ pointer: [2] }) },
  { name: 'pointer of 3', field: `${T}.pointer`, mutate: trajectory({ pointer: [2, 3, 4] }) },
  { name: 'pointer [x, x]', field: `${T}.pointer`, mutate: trajectory({ pointer: [3, 3] }) },
  { name: 'pointer negative', field: `${T}.pointer`, mutate: trajectory({ pointer: [-1, 3] }) },
  { name: 'pointer fractional', field: `${T}.pointer`, mutate: trajectory({ pointer: [1.5, 3] }) },
  { name: 'local pointer out of range', field: `${T}.pointer.1`, mutate: trajectory({ pointer: [2, POOL] }) },
  { name: 'pointer far out of range', field: `${T}.pointer.0`, mutate: trajectory({ pointer: [349, 446] }) },
  {
    name: 'global indices of pool members in pointer (no pointer_global)',
    field: `${T}.pointer.0`,
    mutate: (r) =>
      trajectory({
        pointer: [(r.candidate_pool_indices as number[])[6], (r.candidate_pool_indices as number[])[7]],
      })(r),
  },
  {
    name: 'global indices in pointer and pointer_global',
    field: `${T}.pointer.0`,
    mutate: (r) => {
      const g = [(r.candidate_pool_indices as number[])[6], (r.candidate_pool_indices as number[])[7]];
      return trajectory({ pointer: g, pointer_global: g })(r);
    },
  },
  {
    name: 'pointer_global not in the pool',
    field: `${T}.pointer_global.1`,
    mutate: (r) =>
      trajectory({ pointer_global: [(r.candidate_pool_indices as number[])[0], 59] }, ['pointer'])(r),
  },
  {
    name: 'pointer_global disagrees with pointer',
    field: `${T}.pointer_global`,
    mutate: (r) =>
      trajectory({
        pointer_global: [
          (r.candidate_pool_indices as number[])[3],
          (r.candidate_pool_indices as number[])[2],
        ],
      })(r),
  },
  {
    name: 'pointer_global of 3',
    field: `${T}.pointer_global`,
    mutate: trajectory({ pointer_global: [1, 2, 3] }),
  },
  { name: 'vqa_correct 2', field: `${T}.vqa_correct`, mutate: trajectory({ vqa_correct: 2 }) },
  { name: "vqa_correct 'yes'", field: `${T}.vqa_correct`, mutate: trajectory({ vqa_correct: 'yes' }) },
  {
    name: 'vqa_correct 1 with accuracy 0',
    field: `${T}.vqa_correct`,
    mutate: trajectory({ vqa_correct: 1 }),
  },
  {
    name: 'vqa_correct 0 with accuracy 0.6',
    field: `${T}.vqa_correct`,
    mutate: trajectory({ vqa_acc_score: 0.6 }),
  },
  { name: 'vqa_acc_score missing', field: `${T}.vqa_acc_score`, mutate: trajectory({}, ['vqa_acc_score']) },
  { name: 'vqa_acc_score 1.5', field: `${T}.vqa_acc_score`, mutate: trajectory({ vqa_acc_score: 1.5 }) },
  { name: 'vqa_acc_score a string', field: `${T}.vqa_acc_score`, mutate: trajectory({ vqa_acc_score: '1' }) },
  { name: 'gen_method missing', field: `${T}.gen_method`, mutate: trajectory({}, ['gen_method']) },
  { name: 'gen_method unknown', field: `${T}.gen_method`, mutate: trajectory({ gen_method: 'greedy' }) },
  {
    name: 'trajectory null',
    field: T,
    mutate: (r) => ({ ...r, pointer_candidates: [(r.pointer_candidates as Json[])[0], null] }),
  },
  // Keyed by query id, the key gives a missing query_id.
  {
    name: 'query_id missing',
    field: 'query_id',
    mutate: ({ query_id: _, ...r }) => r,
    formats: ['json', 'jsonl', 'parquet'],
  },
  { name: 'query_id negative', field: 'query_id', mutate: (r) => ({ ...r, query_id: -1 }) },
  { name: 'query_id fractional', field: 'query_id', mutate: (r) => ({ ...r, query_id: 1.5 }) },
  { name: 'query_id repeated', field: 'query_id', mutate: (r) => ({ ...r, query_id: 0 }) },
  {
    name: 'query_id disagrees with its key',
    field: 'query_id',
    mutate: (r) => ({ ...r, query_id: 77 }),
    formats: ['json-keyed'],
  },
  { name: 'pool missing', field: 'candidate_pool_ids', mutate: ({ candidate_pool_indices: _, ...r }) => r },
  {
    name: 'pool negative index',
    field: 'candidate_pool_indices.2',
    mutate: (r) => ({
      ...r,
      candidate_pool_indices: (r.candidate_pool_indices as number[]).map((g, i) => (i === 2 ? -4 : g)),
    }),
  },
  {
    name: 'pool fields disagree',
    field: 'candidate_pool_ids',
    mutate: (r) => ({ ...r, candidate_pool_ids: [1, 2, 3] }),
  },
  {
    name: 'global index beyond the embeddings (rule 3)',
    field: 'candidate_pool_indices.4',
    mutate: (r) => ({
      ...r,
      candidate_pool_indices: (r.candidate_pool_indices as number[]).map((g, i) =>
        i === 4 ? TABLE_ROWS + 5 : g,
      ),
    }),
  },
  {
    name: 'pool repeats a pointed candidate',
    field: `${T}.pointer`,
    mutate: (r) => ({
      ...r,
      candidate_pool_indices: (r.candidate_pool_indices as number[]).map((g, i, p) => (i === 3 ? p[2] : g)),
    }),
  },
  {
    name: 'pointer_candidates missing',
    field: 'pointer_candidates',
    mutate: ({ pointer_candidates: _, ...r }) => r,
  },
  {
    name: 'pointer_candidates not an array',
    field: 'pointer_candidates',
    mutate: (r) => ({ ...r, pointer_candidates: 3 }),
  },
  // A Parquet row cannot be null as a whole (its columns can).
  { name: 'record null', field: '(record)', mutate: () => null, formats: ['json', 'json-keyed', 'jsonl'] },
  { name: 'query embedding missing', field: 'query_id', mutate: (r) => r, queryEmbedding: () => undefined },
  {
    name: 'query embedding of another length',
    field: 'query_id',
    mutate: (r) => r,
    queryEmbedding: () => [1, 2],
  },
  {
    name: 'query embedding not finite',
    field: 'query_id',
    mutate: (r) => r,
    queryEmbedding: () => Array(D).fill(Number.NaN),
  },
];

export const BAD_ROW = 2;

export function fileBytes(
  format: Format,
  records: unknown[],
): { name: string; bytes: Uint8Array | string } | null {
  if (format === 'json') return { name: 'data.json', bytes: JSON.stringify(records) };
  if (format === 'json-keyed') {
    const keyed: Json = {};
    records.forEach((r, i) => {
      keyed[String(i)] = r;
    });
    return { name: 'data.json', bytes: JSON.stringify(keyed) };
  }
  // A blank line first: the row an error names is the line's, not the record's index.
  if (format === 'jsonl')
    return { name: 'data.jsonl', bytes: `\n${records.map((r) => JSON.stringify(r)).join('\n')}\n` };
  try {
    const names = ['query_id', 'candidate_pool_indices', 'candidate_pool_ids', 'pointer_candidates'];
    const columnData = names
      .filter((name) => records.some((r) => (r as Json | null)?.[name] !== undefined))
      .map((name) => ({ name, data: records.map((r) => (r as Json | null)?.[name] ?? null) as never[] }));
    return { name: 'data.parquet', bytes: new Uint8Array(parquetWriteBuffer({ columnData })) };
  } catch {
    return null; // the writer cannot hold this mix of types in one column
  }
}
