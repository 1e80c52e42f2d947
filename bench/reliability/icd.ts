// ICD records and controller (seed 002, issue 24 items 12-15): hostile RL data files (every field
// wrong in turn, pointers out of range as local or as global indices, repeated query ids, missing or
// malformed query embeddings, a vqa_correct that disagrees with the accuracy) written as JSON,
// JSON keyed by query id, JSONL and Parquet, read as the CLI reads them, normalised and validated:
// each must end as a DatasetValidationError naming the row (the line, in JSONL) and the field. Then
// the final-trajectory quotas and property 6 over many random trajectory sets, pool injection at
// the cap over many random pools, error rule 4's default warning, and a few files through the CLI.
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { readIcdParquet } from '../../src/adapters/icd/parquet';
import { DatasetValidationError, SearcherError } from '../../src/core/errors';
import { TrajectoryQualityController } from '../../src/core/icd/controller';
import { createEmbeddingTable } from '../../src/core/icd/embeddings';
import { CandidatePoolInjector } from '../../src/core/icd/injector';
import { normaliseIcdPools } from '../../src/core/icd/normalise';
import { parseIcdText } from '../../src/core/icd/parse';
import type { IcdQueryRecord, IcdTrajectory } from '../../src/core/icd/types';
import { createRandom, permutation, type Random } from '../../src/core/random';

type Json = Record<string, unknown>;
type Format = 'json' | 'json-keyed' | 'jsonl' | 'parquet';
const FORMATS: Format[] = ['json', 'json-keyed', 'jsonl', 'parquet'];

const TABLE_ROWS = 60;
const D = 6;
const POOL = 8;
const ROWS = 4;

/** Four valid raw records: pools of 8 (normalised to 16), two trajectories each. */
function validRecords(): Json[] {
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

interface HostileCase {
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

const CASES: HostileCase[] = [
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

const BAD_ROW = 2;

function fileBytes(format: Format, records: unknown[]): { name: string; bytes: Uint8Array | string } | null {
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

async function hostileFiles(dir: string) {
  const random = createRandom(11);
  const table = createEmbeddingTable(
    Array.from({ length: TABLE_ROWS }, () => Array.from({ length: D }, () => random.nextNormal())),
  );
  const goodQuery = (id: number) => Array.from({ length: D }, (_, k) => Math.sin(id + k));
  const figures = {
    tried: 0,
    refusedNamingRowAndField: 0,
    refusedOtherwise: 0,
    untyped: 0,
    accepted: 0,
    notWritable: 0,
  };
  const failures: string[] = [];
  let index = 0;
  for (const c of CASES) {
    for (const format of FORMATS) {
      if (c.formats && !c.formats.includes(format)) continue;
      const records: unknown[] = validRecords();
      records[BAD_ROW] = c.mutate(records[BAD_ROW] as Json);
      const file = fileBytes(format, records);
      if (!file) {
        figures.notWritable++;
        continue;
      }
      figures.tried++;
      const path = join(dir, `${index++}-${file.name}`);
      await writeFile(path, file.bytes);
      const expectedRow = format === 'jsonl' ? BAD_ROW + 1 : BAD_ROW;
      try {
        const raw =
          format === 'parquet'
            ? await readIcdParquet(new Uint8Array(await readFile(path)))
            : parseIcdText(await readFile(path, 'utf8'), format === 'jsonl' ? 'jsonl' : 'json');
        const bad = c.queryEmbedding;
        normaliseIcdPools(raw, {
          poolSize: 16,
          table,
          queryEmbedding: (id) => (bad && id === BAD_ROW ? bad(id) : goodQuery(id)) as number[],
        });
        figures.accepted++;
        failures.push(`${format}: ${c.name}: accepted`);
      } catch (error) {
        if (DatasetValidationError.isInstance(error)) {
          // The normaliser counts rows as records; only the reader knows lines.
          const row =
            error.row === expectedRow ||
            (c.queryEmbedding || c.name.includes('rule 3') ? error.row === BAD_ROW : false);
          if (row && error.field === c.field) figures.refusedNamingRowAndField++;
          else {
            figures.refusedOtherwise++;
            failures.push(`${format}: ${c.name}: row ${error.row} field ${error.field}`);
          }
        } else {
          figures[SearcherError.isInstance(error) ? 'refusedOtherwise' : 'untyped']++;
          failures.push(`${format}: ${c.name}: ${String(error).slice(0, 120)}`);
        }
      }
    }
  }
  return { ...figures, cases: CASES.length, formats: FORMATS.length, failures: failures.slice(0, 10) };
}

function randomTrajectories(random: Random): IcdTrajectory[] {
  const n = 1 + random.nextInt(16);
  // A bias per set, so that sets without acc-0 (or without positives) trajectories come up often.
  const weights = [random.nextFloat(), random.nextFloat(), random.nextFloat()];
  return Array.from({ length: n }, () => {
    const u = random.nextFloat() * (weights[0]! + weights[1]! + weights[2]!);
    const score =
      u < weights[0]! ? 1 : u < weights[0]! + weights[1]! ? [0.3, 0.6, 0.9][random.nextInt(3)]! : 0;
    const [a, b] = permutation(64, random);
    return { pointer: [a!, b!], vqa_correct: score > 0 ? 1 : 0, vqa_acc_score: score, gen_method: 'sample' };
  });
}

function quotas(sets: number) {
  const random = createRandom(12);
  const controller = new TrajectoryQualityController();
  const m = controller.settings.targetTrajectoryCount;
  const f = {
    sets,
    exactlyM: 0,
    fewerWithoutAcc0: 0,
    fewerWithAcc0: 0,
    quotaExceeded: 0,
    positiveOrPartialRepeated: 0,
    minimumMissed: 0,
  };
  for (let i = 0; i < sets; i++) {
    const all = randomTrajectories(random);
    const final = controller.selectFinalTrajectories(all);
    const pos = final.filter((t) => t.vqa_acc_score >= 1);
    const part = final.filter((t) => t.vqa_acc_score > 0 && t.vqa_acc_score < 1);
    if (pos.length > 4 || part.length > 2 || final.length > m) f.quotaExceeded++;
    if (new Set([...pos, ...part]).size !== pos.length + part.length) f.positiveOrPartialRepeated++;
    if (pos.length < Math.min(2, all.filter((t) => t.vqa_acc_score >= 1).length)) f.minimumMissed++;
    if (part.length < Math.min(1, all.filter((t) => t.vqa_acc_score > 0 && t.vqa_acc_score < 1).length))
      f.minimumMissed++;
    if (final.length === m) f.exactlyM++;
    else if (all.some((t) => t.vqa_acc_score === 0)) f.fewerWithAcc0++;
    else f.fewerWithoutAcc0++;
  }
  return f;
}

function injection(trials: number) {
  const random = createRandom(13);
  const rows = 300;
  const table = createEmbeddingTable(
    Array.from({ length: rows }, () => Array.from({ length: D }, () => random.nextNormal())),
  );
  const f = { trials, injected: 0, halfPairsLeft: 0, overCap: 0, pointersMoved: 0, poolsNotK: 0 };
  const injector = new CandidatePoolInjector({ table, warn: () => undefined });
  const capped = (cap: number) =>
    new CandidatePoolInjector({ table, maxInjectPerQuery: cap, warn: () => undefined });
  for (let i = 0; i < trials; i++) {
    const pool = permutation(rows, random).slice(0, 64);
    const record: IcdQueryRecord = {
      query_id: i,
      candidate_pool_indices: pool,
      pointer_candidates: [0, 1, 2].map(() => {
        const [a, b] = permutation(64, random);
        return {
          pointer: [a!, b!],
          pointer_global: [pool[a!]!, pool[b!]!],
          vqa_correct: 0,
          vqa_acc_score: 0,
          gen_method: 'beam',
        };
      }),
    };
    // Positives drawn mostly from outside the pool, some sharing a member with the pool.
    const positives = Array.from({ length: random.nextInt(10) }, () => {
      const [a, b] = permutation(rows, random);
      return {
        global_indices: random.nextFloat() < 0.3 ? [pool[random.nextInt(64)]!, b!] : [a!, b!],
        acc_score: 1,
      };
    }).filter((p) => p.global_indices[0] !== p.global_indices[1]);
    const cap = random.nextInt(10);
    const result = (cap === 8 ? injector : capped(cap)).injectPositives(
      record,
      positives,
      Array.from({ length: D }, () => random.nextNormal()),
    );
    const after = new Set(result.record.candidate_pool_indices);
    const whole = positives.filter((p) => p.global_indices.every((g) => after.has(g)));
    f.injected += result.replaced.length;
    if (result.replaced.length > cap) f.overCap++;
    if (after.size !== 64 || result.record.candidate_pool_indices.length !== 64) f.poolsNotK++;
    f.halfPairsLeft += result.replaced.filter(
      (r) => !whole.some((p) => p.global_indices.includes(r.added)),
    ).length;
    f.pointersMoved += record.pointer_candidates.filter((t, j) =>
      result.record.pointer_candidates[j]!.pointer.some(
        (p, k) => result.record.candidate_pool_indices[p] !== t.pointer_global![k],
      ),
    ).length;
  }
  return f;
}

/** Error rule 4 with no `warn` given: how many of the queries whose oracle cannot rise were warned on the console. */
function defaultWarnings(queries: number) {
  const random = createRandom(14);
  const table = createEmbeddingTable(
    Array.from({ length: 100 }, () => Array.from({ length: D }, () => random.nextNormal())),
  );
  const injector = new CandidatePoolInjector({ table });
  const original = console.warn;
  let seen = 0;
  console.warn = () => {
    seen++;
  };
  try {
    for (let i = 0; i < queries; i++) {
      const pool = permutation(100, random).slice(0, 64);
      injector.injectPositives(
        {
          query_id: i,
          candidate_pool_indices: pool,
          pointer_candidates: [{ pointer: [0, 1], vqa_correct: 1, vqa_acc_score: 1, gen_method: 'beam' }],
        },
        [],
        Array.from({ length: D }, () => random.nextNormal()),
      );
    }
  } finally {
    console.warn = original;
  }
  return { queriesWithoutRise: queries, warnedByDefault: seen };
}

/** A few hostile files through `searcher-rl icd eval` (a process each): exit 1 and the row and field on stderr. */
async function throughCli(dir: string) {
  const run = promisify(execFile);
  const root = join(import.meta.dirname, '..', '..');
  const picks = [
    'global indices of pool members in pointer (no pointer_global)',
    'gen_method missing',
    'vqa_correct 1 with accuracy 0',
  ];
  let named = 0;
  for (const name of picks) {
    const c = CASES.find((x) => x.name === name)!;
    const records: unknown[] = validRecords();
    records[BAD_ROW] = c.mutate(records[BAD_ROW] as Json);
    const path = join(dir, `cli-${named}-${picks.indexOf(name)}.jsonl`);
    await writeFile(path, records.map((r) => JSON.stringify(r)).join('\n'));
    const outcome = await run(
      join(root, 'node_modules', '.bin', 'tsx'),
      ['src/cli/main.ts', 'icd', 'eval', '--data', path, '--pool-size', String(POOL)],
      { cwd: root, timeout: 60_000 },
    )
      .then(() => ({ code: 0, stderr: '' }))
      .catch((e: { code?: number; stderr?: string }) => ({ code: e.code ?? -1, stderr: e.stderr ?? '' }));
    if (outcome.code === 1 && outcome.stderr.includes(`row ${BAD_ROW}, field '${c.field}'`)) named++;
  }
  return { files: picks.length, exit1NamingRowAndField: named };
}

export async function icdReliability(root: string): Promise<Record<string, unknown>> {
  const dir = join(root, 'files');
  await mkdir(dir, { recursive: true });
  const started = process.hrtime.bigint();
  const files = await hostileFiles(dir);
  const result = {
    figure: 'icd',
    hostileFiles: files,
    quotas: quotas(20_000),
    injectionAtTheCap: injection(5_000),
    errorRule4: defaultWarnings(50),
    cli: await throughCli(dir),
    seconds: Number((process.hrtime.bigint() - started) / 1_000_000n) / 1000,
  };
  return result;
}
