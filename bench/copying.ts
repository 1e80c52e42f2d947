// Does the small Searcher copy what it reads (docs/method.md#copying-names)? Three held-out
// comparisons on a newly generated corpus of invented countries (corpus 1: its names share nothing
// with corpus 0, on whose held-out questions the recipe was chosen), each trained with
// `searcher-rl train` and the own-data config (test/support/new-dataset.ts) on seeds 1-3:
//   own-data         held-out (country, attribute) pairs; every country also in training questions
//   unseen-entities  every question of a quarter of the countries held out: no training question names them
//   reworded         as unseen-entities, the questions worded without their page's words ("Which goods
//                    does X sell abroad?" for "X main export copper"): the question's words find the
//                    country's six pages, not which one answers
//   tables           as reworded, on one page an attribute: a Markdown table with a row a country
//                    (--shape table): the question's words find all six tables, which name the
//                    country alike; the right one is the attribute's, a word the question lacks
//   kv               as reworded, on one page a country of `attribute: value` lines (--shape kv):
//                    the question's words find the page; the reader's ceiling is the limit
// One JSON line per run, then one per comparison with the mean and the spread (min, max) of: naive
// RAG (search with the question's words, read the top page), the warm start (SFT) and RL, judge
// success on the held-out questions, RL's gain over the stronger of the two each seed, the reader's
// ceiling (golden pages alone); and the share of held-out questions whose first query names
// the asked country. BENCH_COPYING_SEEDS=1,2,3 and BENCH_COPYING_VARIANTS=own-data,... choose. Each
// run's folder stays in .cache/bench-copying/VARIANT-sSEED (made anew each time) for a look at its episodes.
import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { mean } from '../src/core/stats';
import { NEW_DATASET_CONFIG, type NewDatasetOptions, writeNewDataset } from '../test/support/new-dataset';
import { seedsAndVariants } from './figures';

const VARIANTS: Record<string, NewDatasetOptions> = {
  'own-data': { holdOut: 'pairs', wording: 'page' },
  'unseen-entities': { holdOut: 'entities', wording: 'page' },
  reworded: { holdOut: 'entities', wording: 'reworded' },
  tables: { holdOut: 'entities', wording: 'reworded', shape: 'table' },
  kv: { holdOut: 'entities', wording: 'reworded', shape: 'kv' },
};
const CORPUS = 1;

const { seeds, variants } = seedsAndVariants('BENCH_COPYING', Object.keys(VARIANTS));

const root = join(import.meta.dirname, '..');
const tsx = join(root, 'node_modules', '.bin', 'tsx');
const run = promisify(execFile);

interface Summary {
  judgeSuccess: number;
}

/** The share of a run's evaluated questions whose first query names the country asked (the uid's first part). */
async function firstQueryNamesEntity(evalDir: string): Promise<number> {
  const lines = (await readFile(join(evalDir, 'event.jsonl'), 'utf8')).split('\n').filter(Boolean);
  let asked = 0;
  let named = 0;
  for (const line of lines) {
    const record = JSON.parse(line) as {
      promptUid: string;
      data: { type: string; turn: number; data: { query?: string } };
    };
    if (record.data.type !== 'search.request' || record.data.turn !== 0) continue;
    const country = record.promptUid.split('-')[0]!;
    const words = (record.data.data.query ?? '').toLowerCase().split(/[^\p{L}\p{N}]+/u);
    asked++;
    if (words.includes(country)) named++;
  }
  if (asked === 0) throw new Error(`${evalDir}/event.jsonl holds no first search`);
  return named / asked;
}

const round = (x: number) => Number(x.toFixed(4));
const results: Record<string, Array<Record<string, number>>> = {};
for (const variant of variants) {
  for (const seed of seeds) {
    const dir = join(root, '.cache', 'bench-copying', `${variant}-s${seed}`);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    await writeNewDataset(join(dir, 'data'), { ...VARIANTS[variant]!, corpus: CORPUS });
    await writeFile(join(dir, 'train.yaml'), NEW_DATASET_CONFIG.replace('seed: 1', `seed: ${seed}`));
    const started = performance.now();
    await run(tsx, [join(root, 'src/cli/main.ts'), 'train', '--config', join(dir, 'train.yaml')], {
      cwd: dir,
      maxBuffer: 64 * 1024 * 1024,
    });
    const seconds = (performance.now() - started) / 1000;
    const runDir = join(dir, 'runs', 'countries');
    const summary = JSON.parse(await readFile(join(runDir, 'summary.json'), 'utf8')) as {
      before: Summary;
      after: Summary;
      baselines: Array<{ name: string; summary: Summary }>;
      readerCeiling?: { ceiling: number | null };
    };
    const naive = summary.baselines.find((b) => b.name === 'naive RAG');
    if (!naive) throw new Error(`${runDir}/summary.json has no naive RAG baseline`);
    const figures = {
      naiveRag: round(naive.summary.judgeSuccess),
      warmStart: round(summary.before.judgeSuccess),
      rl: round(summary.after.judgeSuccess),
      rlOverStrongest: round(
        summary.after.judgeSuccess - Math.max(naive.summary.judgeSuccess, summary.before.judgeSuccess),
      ),
      readerCeiling: round(summary.readerCeiling?.ceiling ?? Number.NaN),
      warmStartNamesEntity: round(await firstQueryNamesEntity(join(runDir, 'eval-before-rl'))),
      rlNamesEntity: round(await firstQueryNamesEntity(join(runDir, 'eval-after-rl'))),
      seconds: Number(seconds.toFixed(1)),
    };
    (results[variant] ??= []).push(figures);
    console.log(JSON.stringify({ bench: 'copying', variant, corpus: CORPUS, seed, ...figures }));
  }
  const rows = results[variant] ?? [];
  const spread = (key: string) => {
    const values = rows.map((r) => r[key]!);
    return {
      mean: round(mean(values)),
      min: Math.min(...values),
      max: Math.max(...values),
    };
  };
  console.log(
    JSON.stringify({
      bench: 'copying',
      variant,
      corpus: CORPUS,
      seeds,
      naiveRag: spread('naiveRag'),
      warmStart: spread('warmStart'),
      rl: spread('rl'),
      rlOverNaiveRag: round(spread('rl').mean - spread('naiveRag').mean),
      rlOverStrongest: spread('rlOverStrongest'),
      readerCeiling: spread('readerCeiling'),
      rlNamesEntity: spread('rlNamesEntity'),
    }),
  );
}
