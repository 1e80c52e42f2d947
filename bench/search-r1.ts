// Search-R1's table on the real-text task (issue 39 item 4), from one command: SmolLM2-135M-Instruct
// as a Search-R1 Searcher (it searches the Wikipedia leads with SQLite FTS5 and answers itself,
// rewarded as the recipe says: Search-R1's exact match) on the held-out test split (pages no training
// question uses), seeds 1-3, beside the baselines:
//   - direct answer and naive RAG (the question's words, the FTS5 top hit read), each by SmolLM2
//     (the Llama generator) and by the extractive reader: `bench/real-text.ts`, run first as a
//     child (deterministic: once);
//   - SFT on the generic demonstrator's episodes (the warm start), then GRPO from it;
//   - GRPO from the instruct model, no SFT (as Search-R1 trains);
//   - the instruct model itself, zero-shot, given the Searcher's instructions;
//   - TRL's GRPOTrainer from the same SFT adapter, the same steps, batch and settings, against
//     `serve-env` (python/scripts/trl_search_r1.py), its adapter evaluated here as every row is;
//     beside it and the SDK's GRPO: wall seconds, seconds a step, rollout tokens a second.
// The recipe is examples/smollm2/real-text.yaml's, chosen on the validation split; here only the
// seed, the run id and the split differ. Each row gets exact match (any of the question's
// reference answers, SQuAD normalisation: Search-R1's em_check) and the rule judge's full score,
// per source (Natural Questions, generated) and over all. One JSON line per figure; the spread is
// the lowest and highest seed.
//
//   bash scripts/fetch-models.sh && bash scripts/fetch-data.sh && npm run bench:search-r1
//   npm run bench:search-r1 -- --seeds 1 --rows sft     # one seed, SFT then GRPO only
// The trl row needs the Python environment (bash scripts/python-env.sh) and the seed's sft row
// (run in the same command, or left in .cache/bench-search-r1/runs by an earlier one with this
// recipe: another is refused, naming the settings that differ).
import { figurePrinter } from './figures';
import { benchPython } from './python-env';
import { spawn } from 'node:child_process';
import { access, readFile, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { createRuleJudge } from '../src/adapters/rule-judge/rule-judge';
import { isJudgeSuccess } from '../src/core/reward/success';
import { mean } from '../src/core/stats';
import { parseJsonlLines } from '../src/core/text-data';
import { loadRunConfig, type RunConfig } from '../src/run/config';
import { adaptersAsMeasured } from '../src/run/recorded';
import { isExactMatchAny, type RealTextQuestion } from '../src/run/real-text';
import { trainRun } from '../src/run/run';

const { values: args } = parseArgs({
  options: {
    seeds: { type: 'string', default: '1,2,3' },
    rows: { type: 'string', default: 'sft,instruct,trl' },
    split: { type: 'string', default: 'test' },
    'skip-baselines': { type: 'boolean', default: false },
  },
});
const root = resolve(import.meta.dirname, '..');
const example = join(root, 'examples', 'smollm2', 'real-text.yaml');
const model = join(
  process.env.SEARCHER_RL_MODELS ?? join(root, '.cache', 'models'),
  'SmolLM2-135M-Instruct.Q4_1.gguf',
);
const runsDir = join(root, '.cache', 'bench-search-r1', 'runs');
const split = args.split as 'validation' | 'test';
const seeds = args.seeds!.split(',').map(Number);
const rows = new Set(args.rows!.split(','));

const print = figurePrinter('search-r1');

try {
  await access(model);
} catch {
  print('skipped', null, { reason: `no model at ${model}: run bash scripts/fetch-models.sh` });
  process.exit(0);
}

// The baselines (and the dataset in .cache/real-text): bench/real-text.ts, its lines passed on.
if (!args['skip-baselines']) {
  const started = performance.now();
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(root, 'bench', 'real-text.ts'),
      '--split',
      split,
      '--baselines',
      'direct_answer,naive_rag',
    ],
    { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) if (line.startsWith('{')) console.log(line);
  });
  const code = await new Promise<number | null>((done) => child.on('close', done));
  if (code !== 0) throw new Error(`bench/real-text.ts exited with ${code}`);
  print('baselines_seconds', (performance.now() - started) / 1000);
}

/** The values of a JSON Lines file (blank lines skipped; a bad line is an error naming it). */
const readJsonl = async <T>(path: string): Promise<T[]> =>
  parseJsonlLines(await readFile(path, 'utf8'), path).map((row) => row.value as T);

const questions = new Map<string, RealTextQuestion>();
for (const q of await readJsonl<RealTextQuestion>(join(root, '.cache', 'real-text', 'questions.jsonl')))
  questions.set(q.uid, q);
const judge = createRuleJudge();

interface Scored {
  em: boolean;
  judge: boolean;
  source: RealTextQuestion['source'];
}

/** A store run's evaluation, from its trajectory records: exact match on any reference and the rule judge's full score. */
async function scoreEvaluation(runDir: string, storeRun: string): Promise<Scored[]> {
  type Evaluated = { data: { promptUid: string; finalAnswer: string } };
  const scored: Scored[] = [];
  for (const { data: t } of await readJsonl<Evaluated>(join(runDir, storeRun, 'trajectory.jsonl'))) {
    const q = questions.get(t.promptUid);
    if (!q) throw new Error(`evaluated question '${t.promptUid}' is not in the dataset`);
    const verdict = await judge.doScore(q.question, t.finalAnswer, q.reference);
    scored.push({
      em: isExactMatchAny(t.finalAnswer, q.answers),
      judge: isJudgeSuccess(verdict.score),
      source: q.source,
    });
  }
  return scored;
}

/** Figures of each row and seed: `[row][seed] = exact match over all`. */
const table = new Map<string, Map<number, number>>();
function report(row: string, seed: number, scored: readonly Scored[], seconds: number | null): void {
  for (const source of ['nq', 'generated:description', 'all'] as const) {
    const mine = scored.filter((s) => source === 'all' || s.source === source);
    if (mine.length === 0) continue;
    const extra = { row, seed, split, source, questions: mine.length };
    const em = mine.filter((s) => s.em).length / mine.length;
    print('exact_match', em, extra);
    print('judge_full', mine.filter((s) => s.judge).length / mine.length, extra);
    if (source === 'all') {
      const bySeed = table.get(row) ?? new Map<number, number>();
      bySeed.set(seed, em);
      table.set(row, bySeed);
    }
  }
  if (seconds !== null) print('seconds', seconds, { row, seed });
}

const base = (overrides: string[]) =>
  loadRunConfig(example, {
    overrides: [
      `runsDir=${runsDir}`,
      `evaluation.split=${split}`,
      `searcher.adapters.policy.model=${model}`,
      ...overrides,
    ],
  });

/** The SDK's GRPO speed from its step metrics: seconds a step, generated tokens a second of rollout. */
async function speeds(row: string, seed: number, metricFile: string): Promise<void> {
  const steps = (await readJsonl<{ data: Record<string, number> }>(metricFile)).map((m) => m.data);
  const rollout = steps.reduce((a, m) => a + m.rolloutMs!, 0) / 1000;
  print('step_seconds', mean(steps.map((m) => (m.rolloutMs! + m.updateMs!) / 1000)), { row, seed });
  print('rollout_tokens_per_second', steps.reduce((a, m) => a + m.rolloutTokens!, 0) / rollout, {
    row,
    seed,
  });
}

interface TrlSummary {
  model: string;
  train_s: number;
  rollout_tokens_per_s: number | null;
  step_s: number[];
  rewards: number[];
}

/** TRL's GRPOTrainer from the seed's SFT adapter (python/scripts/trl_search_r1.py), then its adapter evaluated. */
async function trlRow(seed: number): Promise<void> {
  const found = benchPython();
  if ('reason' in found) {
    print('skipped', null, { row: 'trl', seed, reason: found.reason });
    return;
  }
  const sftRun = join(runsDir, `sft-s${seed}`);
  let recorded: Record<string, unknown>;
  try {
    recorded = JSON.parse(await readFile(join(sftRun, 'config.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    throw new Error(`the trl row starts from seed ${seed}'s sft row (${sftRun}): run --rows sft,trl`);
  }
  // An sft row left by an earlier command is this command's only if made with this recipe.
  const recipe = await base([`seed=${seed}`, `runId=sft-s${seed}`]);
  const asMeasured = (config: { searcher: RunConfig['searcher'] }) => ({
    ...config.searcher,
    adapters: adaptersAsMeasured(config.searcher.adapters),
  });
  for (const key of ['seed', 'dataset', 'sft', 'phases', 'trainer', 'evaluation', 'searcher'] as const) {
    const mine = key === 'searcher' ? asMeasured(recipe) : recipe[key];
    const theirs =
      key === 'searcher' ? asMeasured(recorded as { searcher: RunConfig['searcher'] }) : recorded[key];
    if (JSON.stringify(mine) !== JSON.stringify(theirs))
      throw new Error(
        `the trl row starts from ${sftRun}, whose '${key}' settings are not this command's recipe: run --rows sft,trl`,
      );
  }
  const out = join(root, '.cache', 'bench-search-r1', `trl-s${seed}`);
  await rm(out, { recursive: true, force: true });
  const child = spawn(
    found.python,
    [join(root, 'python', 'scripts', 'trl_search_r1.py'), '--run', sftRun, '--out', out],
    {
      cwd: root,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8');
    process.stderr.write(chunk);
  });
  const code = await new Promise<number | null>((done) => child.on('close', done));
  if (code !== 0) throw new Error(`python/scripts/trl_search_r1.py exited with ${code}`);
  const summary = JSON.parse(output.trim().split('\n').pop()!) as TrlSummary;
  const result = await trainRun(
    await base([
      `seed=${seed}`,
      `runId=trl-s${seed}`,
      'sft.demonstrations=0',
      'phases.0.steps=0',
      `searcher.adapters.policy.lora.adapter=${summary.model}`,
    ]),
  );
  report('trl_grpo_from_sft', seed, await scoreEvaluation(result.runDir, 'eval-before-rl'), summary.train_s);
  print('step_seconds', mean(summary.step_s), { row: 'trl_grpo_from_sft', seed });
  print('rollout_tokens_per_second', summary.rollout_tokens_per_s, { row: 'trl_grpo_from_sft', seed });
}

for (const seed of seeds) {
  if (rows.has('sft')) {
    const runId = `sft-s${seed}`;
    await rm(join(runsDir, runId), { recursive: true, force: true });
    const result = await trainRun(await base([`seed=${seed}`, `runId=${runId}`]));
    const sft = (result.stageSeconds['warm start'] ?? 0) + (result.stageSeconds['eval-before-rl'] ?? 0);
    report('sft', seed, await scoreEvaluation(result.runDir, 'eval-before-rl'), sft);
    const grpo = Object.entries(result.stageSeconds)
      .filter(([stage]) => stage !== 'warm start' && stage !== 'eval-before-rl' && stage !== 'setup')
      .reduce((a, [, s]) => a + s, 0);
    report('grpo_from_sft', seed, await scoreEvaluation(result.runDir, 'eval-after-rl'), grpo);
    const naive = result.baselines.find((b) => b.name === 'naive RAG');
    if (naive)
      print('run_naive_rag_exact_match', naive.summary.judgeSuccess, { seed, split, reader: 'extractive' });
    await speeds('grpo_from_sft', seed, join(result.runDir, 'grpo', 'metric.jsonl'));
  }
  if (rows.has('trl')) await trlRow(seed);
  if (rows.has('instruct')) {
    const runId = `instruct-s${seed}`;
    await rm(join(runsDir, runId), { recursive: true, force: true });
    const result = await trainRun(await base([`seed=${seed}`, `runId=${runId}`, 'sft.demonstrations=0']));
    report('instruct_zero_shot', seed, await scoreEvaluation(result.runDir, 'eval-before-rl'), null);
    const seconds = Object.values(result.stageSeconds).reduce((a, s) => a + s, 0);
    report('grpo_from_instruct', seed, await scoreEvaluation(result.runDir, 'eval-after-rl'), seconds);
  }
}

// Mean and spread over the seeds, and GRPO's margin over SFT per seed.
for (const [row, bySeed] of table) {
  const values = [...bySeed.values()];
  print('exact_match_mean', mean(values), {
    row,
    split,
    seeds: [...bySeed.keys()],
    min: Math.min(...values),
    max: Math.max(...values),
  });
}
const sft = table.get('sft');
const grpo = table.get('grpo_from_sft');
if (sft && grpo)
  for (const [seed, value] of grpo)
    print('grpo_over_sft_points', 100 * (value - sft.get(seed)!), { seed, split });
const trl = table.get('trl_grpo_from_sft');
if (sft && trl)
  for (const [seed, value] of trl)
    if (sft.has(seed)) print('trl_over_sft_points', 100 * (value - sft.get(seed)!), { seed, split });
