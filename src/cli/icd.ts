import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { InvalidArgumentError } from '../index';
import { createJsonlStore } from '../adapters/store/jsonl/index';
import {
  buildIcdDemoData,
  createEmbeddingTable,
  DEFAULT_ICD_DATA_OPTIONS,
  DEFAULT_ICD_FLOW_OPTIONS,
  DEFAULT_ICD_SETTINGS,
  formatIcdJsonl,
  normaliseIcdPools,
  parseIcdText,
  parseIcdVectorsText,
  readIcdParquet,
  runIcdFlow,
  runIcdTable,
  formatIcdTable,
  icdTableJsonLines,
  DEFAULT_ICD_TABLE_OPTIONS,
  ICD_WARM_UPS,
  type IcdWarmUp,
  storedOracleAtK,
  validateIcdRecords,
  type IcdQueryRecord,
} from '../icd/index';

const HELP: Record<string, string> = {
  icd: `searcher-rl icd <command> [options]   in-context demonstration selection (docs/method.md#icd-selection)

Commands (each has --help):
  normalise   bring RL data with pools of any size to K candidates (your files)
  eval        check RL data (pool sizes, pointers, global indices); the stored-trajectory oracle
  mine        the embedded demo up to global positive mining
  inject      the embedded demo up to pool injection (prints oracle@K before/after)
  control     the embedded demo up to commit-on-improve and the final M trajectories
  train       the whole flow on the embedded demo: data, warm-up, GRPO, held-out accuracy
  table       docs/icd.md's comparison from one run: baselines, warm-ups, GRPO, oracle@K (npm run bench:icd)
`,
  normalise: `searcher-rl icd normalise --data FILE --embeddings FILE --query-embeddings FILE --out FILE [--pool-size K]

  --data              RL data: .json (array, or object keyed by query id), .jsonl, or .parquet
                      candidate_pool_indices or candidate_pool_ids; a trajectory's pointer holds
                      local indices (positions in the pool), pointer_global global ones (give
                      either or both); gen_method is required
  --embeddings        candidate embeddings by global index: .json (array of vectors) or .jsonl
  --query-embeddings  query embeddings: .json array indexed by query_id, or object keyed by it
  --pool-size         K (default ${DEFAULT_ICD_SETTINGS.poolSize})
  --out               the normalised data, JSONL
`,
  eval: `searcher-rl icd eval --data FILE [--pool-size K] [--embeddings FILE]

  Validates the data (pool size, pointer range, global indices against the embeddings when given)
  and prints the number of queries, trajectories per query and storedOracleAtK: the share of
  queries with a correct stored trajectory. It sees only the stored choices, so it is a lower
  bound of oracle@K over every pair of the pool, which needs the frozen model
  (docs/method.md#oracle-at-k).
`,
  demo: `searcher-rl icd {mine|inject|control} --out DIR [--seed N] [--queries N]

  Runs the embedded demo (seeded) up to the stage and writes DIR/<stage>.jsonl.
`,
  train: `searcher-rl icd train --out DIR [--seed N] [--queries N] [--steps N] [--warm-up-epochs N]
                        [--warm-up beam|cosine|none] [--beam-width N] [--shots N]

  The whole flow on the embedded demo: normalise, mine, inject, control, then the pointer selector
  (tfjs): a cross-entropy warm-up (on the beam labels, made by a beam search of width --beam-width
  scored by the frozen model; on cosine top-k labels; or none) and GRPO. Checkpoints go to
  DIR/store (a run resumes from its latest one, with the same --warm-up); prints oracle@K over
  every ordered choice of the pool and the held-out mean accuracy of random choice, cosine top-k,
  the beam search, the warm-up and GRPO, and writes DIR/final.jsonl and DIR/figures.json.
`,
  table: `searcher-rl icd table [--seeds 7,8] [--queries N] [--steps N] [--warm-up-epochs N]
                        [--beam-width N] [--shots N] [--json FILE]

  The ICD table of docs/icd.md from one run, one whole run per seed: random, cosine top-k, beam search
  (scored by the frozen model), the warm-up on cosine and on beam labels, GRPO with no warm-up and
  after each warm-up, and oracle@K over every ordered choice before and after injection; held-out
  and training mean accuracy, mean and each seed. Prints one JSON line per figure, then the table
  and its wall time; --json writes the whole result.
`,
};

const write = (line: string) => process.stdout.write(`${line}\n`);
const usage = (text: string) => {
  process.stdout.write(text);
  return 0;
};

async function readRecords(path: string): Promise<IcdQueryRecord[]> {
  const ext = extname(path).toLowerCase();
  if (ext === '.parquet') {
    return readIcdParquet(await readFile(path));
  }
  return parseIcdText(await readFile(path), ext === '.jsonl' ? 'jsonl' : 'json', { source: path });
}

async function readVectors(path: string): Promise<unknown> {
  return parseIcdVectorsText(
    await readFile(path),
    extname(path).toLowerCase() === '.jsonl' ? 'jsonl' : 'json',
    path,
  );
}

const integer = (value: string | undefined, name: string, fallback: number) => {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!(Number.isInteger(n) && n > 0))
    throw new InvalidArgumentError({ argument: name, message: `must be a positive integer, got '${value}'` });
  return n;
};

/** The demo's sizes shared by train and table: queries, GRPO steps, warm-up epochs, beam width, shots. */
/** The options `demoSizes` reads, shared by `train` and `table`. */
const DEMO_SIZE_OPTIONS = {
  queries: { type: 'string' },
  steps: { type: 'string' },
  'warm-up-epochs': { type: 'string' },
  'beam-width': { type: 'string' },
  shots: { type: 'string' },
} as const;

function demoSizes(
  values: Record<string, string | boolean | undefined>,
  d: { queries: number; grpoSteps: number; warmUpEpochs: number; beamWidth: number; shots: number },
) {
  const text = (name: string) => values[name] as string | undefined;
  return {
    queries: integer(text('queries'), '--queries', d.queries),
    grpoSteps: integer(text('steps'), '--steps', d.grpoSteps),
    warmUpEpochs: integer(text('warm-up-epochs'), '--warm-up-epochs', d.warmUpEpochs),
    beamWidth: integer(text('beam-width'), '--beam-width', d.beamWidth),
    shots: integer(text('shots'), '--shots', d.shots),
  };
}

export async function icdCommand(argv: string[]): Promise<number> {
  const [command = '--help', ...rest] = argv;
  if (command === '--help' || command === 'help' || command === '-h') {
    return usage(HELP.icd!);
  }
  const help = rest.includes('--help') || rest.includes('-h');
  /** A subcommand's options parsed strictly, or undefined when `--help` asked for its usage (printed). */
  const optionsOf = <Options extends NonNullable<ParseArgsConfig['options']>>(
    helpText: string,
    options: Options,
  ) => {
    if (help) {
      usage(helpText);
      return undefined;
    }
    return parseArgs({ args: rest, options, strict: true }).values;
  };
  if (command === 'normalise' || command === 'normalize') {
    const values = optionsOf(HELP.normalise!, {
      data: { type: 'string' },
      embeddings: { type: 'string' },
      'query-embeddings': { type: 'string' },
      out: { type: 'string' },
      'pool-size': { type: 'string' },
    });
    if (!values) return 0;
    if (!values.data || !values.embeddings || !values['query-embeddings'] || !values.out)
      throw new InvalidArgumentError({
        argument: 'normalise',
        message: 'needs --data, --embeddings, --query-embeddings and --out (see --help)',
      });
    const raw = await readRecords(values.data);
    const table = createEmbeddingTable((await readVectors(values.embeddings)) as number[][]);
    const queries = (await readVectors(values['query-embeddings'])) as Record<string, number[]> | number[][];
    const queryEmbedding = (id: number) => {
      const v = Array.isArray(queries) ? queries[id] : queries[String(id)];
      if (!v)
        throw new InvalidArgumentError({
          argument: '--query-embeddings',
          message: `has no embedding for query ${id}`,
        });
      return v;
    };
    const { records, changes } = normaliseIcdPools(raw, {
      poolSize: integer(values['pool-size'], '--pool-size', DEFAULT_ICD_SETTINGS.poolSize),
      table,
      queryEmbedding,
    });
    await writeFile(values.out, formatIcdJsonl(records));
    write(
      `${records.length} queries normalised to K = ${records[0]?.candidate_pool_indices.length ?? 0}: ${changes.reduce((n, c) => n + c.added, 0)} candidates added, ${changes.reduce((n, c) => n + c.dropped, 0)} dropped, ${changes.reduce((n, c) => n + c.merged, 0)} repeats merged -> ${values.out}`,
    );
    return 0;
  }
  if (command === 'eval') {
    const values = optionsOf(HELP.eval!, {
      data: { type: 'string' },
      embeddings: { type: 'string' },
      'pool-size': { type: 'string' },
    });
    if (!values) return 0;
    if (!values.data)
      throw new InvalidArgumentError({ argument: 'eval', message: 'needs --data FILE (see --help)' });
    const records = await readRecords(values.data);
    const poolSize = integer(values['pool-size'], '--pool-size', DEFAULT_ICD_SETTINGS.poolSize);
    const embeddingCount = values.embeddings
      ? ((await readVectors(values.embeddings)) as unknown[]).length
      : undefined;
    validateIcdRecords(records, { poolSize, ...(embeddingCount !== undefined && { embeddingCount }) });
    const counts = records.map((r) => r.pointer_candidates.length);
    write(
      JSON.stringify({
        queries: records.length,
        poolSize,
        trajectoriesPerQuery: { min: Math.min(...counts), max: Math.max(...counts) },
        storedOracleAtK: storedOracleAtK(records),
      }),
    );
    return 0;
  }
  if (command === 'mine' || command === 'inject' || command === 'control') {
    const values = optionsOf(HELP.demo!, {
      out: { type: 'string', default: 'runs/icd' },
      seed: { type: 'string' },
      queries: { type: 'string' },
    });
    if (!values) return 0;
    const data = await buildIcdDemoData(
      {
        ...DEFAULT_ICD_DATA_OPTIONS,
        seed: integer(values.seed, '--seed', DEFAULT_ICD_DATA_OPTIONS.seed),
        queries: integer(values.queries, '--queries', DEFAULT_ICD_DATA_OPTIONS.queries),
        log: write,
      },
      command,
    );
    await mkdir(values.out!, { recursive: true });
    const file = join(values.out!, `${command}.jsonl`);
    if (command === 'mine')
      await writeFile(
        file,
        `${[...data.positives].map(([queryId, positives]) => JSON.stringify({ query_id: queryId, positives })).join('\n')}\n`,
      );
    else await writeFile(file, formatIcdJsonl(command === 'inject' ? data.injected : data.final));
    write(`wrote ${file}`);
    return 0;
  }
  if (command === 'train') {
    const values = optionsOf(HELP.train!, {
      out: { type: 'string', default: 'runs/icd' },
      seed: { type: 'string' },
      'warm-up': { type: 'string' },
      ...DEMO_SIZE_OPTIONS,
    });
    if (!values) return 0;
    const out = values.out!;
    await mkdir(out, { recursive: true });
    const d = DEFAULT_ICD_FLOW_OPTIONS;
    const warmUp = (values['warm-up'] ?? d.warmUp) as IcdWarmUp;
    if (!ICD_WARM_UPS.includes(warmUp))
      throw new InvalidArgumentError({
        argument: '--warm-up',
        message: `must be one of ${ICD_WARM_UPS.join(', ')}, got '${warmUp}'`,
      });
    const sizes = demoSizes(values, d);
    const result = await runIcdFlow({
      ...d,
      ...sizes,
      warmUp,
      seed: integer(values.seed, '--seed', d.seed),
      store: createJsonlStore({ dir: join(out, 'store') }),
      runId: 'selector',
      log: write,
    });
    const { oracle } = result.data.figures;
    await writeFile(join(out, 'final.jsonl'), formatIcdJsonl(result.data.final));
    const summary = {
      oracleAtK: { definition: 'docs/method.md#oracle-at-k', ...oracle },
      heldOutMeanAccuracy: result.heldOut,
      trainMeanAccuracy: { warmUp: result.selector.warmUp?.train ?? null, grpo: result.selector.grpo.train },
      labelAccuracy: result.selector.labelAccuracy,
      warmUp,
      heldOutQueries: result.data.heldOutIds.length,
    };
    await writeFile(join(out, 'figures.json'), `${JSON.stringify(summary, null, 2)}\n`);
    write(
      `oracle@K over every ordered choice, training queries: mean best ${oracle.before.meanBest.toFixed(3)} before injection -> ${oracle.after.meanBest.toFixed(3)} after (a choice of accuracy 1 in ${oracle.before.shareFull.toFixed(3)} -> ${oracle.after.shareFull.toFixed(3)} of the pools)`,
    );
    const h = result.heldOut;
    write(
      `held-out mean accuracy (${result.data.heldOutIds.length} queries): random ${h.random.toFixed(3)}, cosine top-${sizes.shots} ${h.cosineTopK.toFixed(3)}, beam search ${h.beamSearch.toFixed(3)} (reads the answers), warm-up ${h.warmUp === null ? '-' : h.warmUp.toFixed(3)} (${warmUp}), GRPO ${h.grpo.toFixed(3)}`,
    );
    return 0;
  }
  if (command === 'table') {
    const values = optionsOf(HELP.table!, {
      seeds: { type: 'string' },
      ...DEMO_SIZE_OPTIONS,
      json: { type: 'string' },
    });
    if (!values) return 0;
    const d = DEFAULT_ICD_TABLE_OPTIONS;
    const seeds = values.seeds?.split(',').map((seed) => integer(seed.trim(), '--seeds', 0)) ?? d.seeds;
    const started = Date.now();
    const result = await runIcdTable({
      ...d,
      ...demoSizes(values, d),
      seeds,
      log: (line) => write(`[${((Date.now() - started) / 1000).toFixed(0)}s] ${line}`),
    });
    write('');
    process.stdout.write(icdTableJsonLines(result));
    write('');
    process.stdout.write(formatIcdTable(result));
    if (values.json) await writeFile(values.json, `${JSON.stringify(result, null, 2)}\n`);
    return 0;
  }
  process.stderr.write(`Unknown icd command '${command}'.\n\n${HELP.icd}`);
  return 2;
}
