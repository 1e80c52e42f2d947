// ICD records and controller (docs/method.md#icd-selection; issue 24, items 12-15): hostile RL data files (every field
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
import { readIcdParquet } from '../../src/adapters/icd/parquet';
import { DatasetValidationError, SearcherError } from '../../src/core/errors';
import { TrajectoryQualityController } from '../../src/core/icd/controller';
import { createEmbeddingTable } from '../../src/core/icd/embeddings';
import { CandidatePoolInjector } from '../../src/core/icd/injector';
import { normaliseIcdPools } from '../../src/core/icd/normalise';
import { parseIcdText } from '../../src/core/icd/parse';
import type { IcdQueryRecord, IcdTrajectory } from '../../src/core/icd/types';
import { createRandom, permutation, type Random } from '../../src/core/random';
import {
  BAD_ROW,
  CASES,
  D,
  FORMATS,
  fileBytes,
  type Json,
  POOL,
  TABLE_ROWS,
  validRecords,
} from './icd-cases';

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
