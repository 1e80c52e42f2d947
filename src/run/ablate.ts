import { cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from '../core/errors';
import { requireOptionalPackages } from '../provider-utils/optional-package';
import { parseRunConfig, type RunConfig } from './config';
import { runPackages } from './packages';
import { writeJsonAtomic } from './folder';
import { RECORDED_UNDER } from './recorded';
import type { RunOptions } from './progress';
import { pct, type EvalSummary } from './evaluate';
import { trainRun } from './run';
import type { BaselineFigure } from './baselines';

/** One row of the ablation table: a change to the run's RL settings, everything else equal. */
export interface Ablation {
  name: string;
  /** What differs from the baseline, in words. */
  change: string;
  /** The ablation's run configuration made from the baseline's. */
  apply: (config: RunConfig) => RunConfig;
}

const withRl = (config: RunConfig, rl: Partial<RunConfig['searcher']['rl']>): RunConfig => ({
  ...config,
  searcher: { ...config.searcher, rl: { ...config.searcher.rl, ...rl } },
});

/**
 * The ablations a researcher asks for first (docs/method.md#ablations): the loss, state masking,
 * the reward's NDCG term and the group size, each against the same baseline, warm start and seeds.
 */
export const ABLATIONS: readonly Ablation[] = [
  {
    name: 'baseline',
    change: 'GSPO, state masking, phase 1 NDCG then phase 2 judge + NDCG, n_agent 8',
    apply: (c) => c,
  },
  {
    name: 'ppo-clip',
    change: 'PPO-clip (token ratios, clip 0.2 / 0.28) instead of GSPO',
    apply: (c) =>
      withRl(c, { loss: { ...c.searcher.rl.loss, kind: 'ppo_clip', clipLow: 0.2, clipHigh: 0.28 } }),
  },
  {
    name: 'no-state-masking',
    change: 'observation tokens trained too',
    apply: (c) => withRl(c, { stateMasking: false }),
  },
  {
    name: 'judge-only',
    change: 'reward = judge only in every phase (no NDCG term)',
    apply: (c) => ({ ...c, phases: c.phases.map((p) => ({ ...p, weights: 'focused' as const })) }),
  },
  { name: 'n-agent-4', change: 'n_agent 4 instead of 8', apply: (c) => withRl(c, { nAgent: 4 }) },
];

/**
 * One ablation's row of the table: judge success and the other figures before and after RL, and its
 * time.
 */
export interface AblationRow {
  name: string;
  change: string;
  before: EvalSummary;
  after: EvalSummary;
  seconds: number;
}

/** The table as Markdown, one row per ablation. */
export function ablationTable(rows: readonly AblationRow[]): string {
  const lines = [
    '| ablation | change | judge success before -> after | points | NDCG after | small print cropped after | right region after | wrong region after | needless crops after | small print success after | seconds |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const points = (r.after.judgeSuccess - r.before.judgeSuccess) * 100;
    lines.push(
      `| ${r.name} | ${r.change} | ${pct(r.before.judgeSuccess)} -> ${pct(r.after.judgeSuccess)} | ${points >= 0 ? '+' : ''}${points.toFixed(1)} | ${r.after.ndcg.toFixed(3)} | ${pct(r.after.smallPrintCropRate)} | ${pct(r.after.rightRegionRate ?? null)} | ${pct(r.after.wrongRegionRate ?? null)} | ${pct(r.after.needlessCropRate ?? null)} | ${pct(r.after.smallPrintSuccess)} | ${r.seconds.toFixed(0)} |`,
    );
  }
  return lines.join('\n');
}

/** A slide run on another seed: the policy's, the sampling's and the corpus's (a run on your own data keeps its data). */
export function withSeed(config: RunConfig, seed: number): RunConfig {
  return { ...config, seed, ...(config.corpus && { corpus: { ...config.corpus, seed } }) };
}

/** One seed's run of the baseline: its evaluations before and after RL, and its time. */
export interface SeedRow {
  seed: number;
  before: EvalSummary;
  after: EvalSummary;
  seconds: number;
  runDir: string;
  /** The run's seconds per stage (TrainRunResult.stageSeconds). */
  stageSeconds?: Record<string, number>;
  /** The scripted baselines on the same split, and the strongest of them and the warm start (TrainRunResult). */
  baselines?: BaselineFigure[];
  strongest?: { name: string; success: number } | null;
}

/** One run, timed: its figures before and after RL, its wall seconds, its folder and seconds per stage. */
async function timedRun(config: RunConfig, runOptions: RunOptions): Promise<Omit<SeedRow, 'seed'>> {
  const started = performance.now();
  const result = await trainRun(config, runOptions);
  return {
    before: result.before,
    after: result.after,
    seconds: (performance.now() - started) / 1000,
    runDir: result.runDir,
    stageSeconds: result.stageSeconds,
    baselines: result.baselines,
    strongest: result.strongest,
  };
}

const SEED_FIGURES = [
  ['judge_success', 'judgeSuccess'],
  ['ndcg', 'ndcg'],
  ['small_print_cropped', 'smallPrintCropRate'],
  ['right_region', 'rightRegionRate'],
  ['wrong_region', 'wrongRegionRate'],
  ['needless_crops', 'needlessCropRate'],
  ['small_print_success', 'smallPrintSuccess'],
] as const;

/** One JSON line per figure of a seed's run: before and after RL (shares), then its seconds. */
export function seedFigureLines(row: SeedRow): string[] {
  const round = (x: number | null | undefined) =>
    x === null || x === undefined ? null : Number(x.toFixed(4));
  return [
    ...SEED_FIGURES.map(([figure, key]) =>
      JSON.stringify({
        bench: 'learning',
        seed: row.seed,
        figure,
        split: row.after.split,
        before: round(row.before[key]),
        after: round(row.after[key]),
      }),
    ),
    ...(row.baselines ?? []).map((b) =>
      JSON.stringify({
        bench: 'learning',
        seed: row.seed,
        figure: b.reference ? 'reference' : 'baseline',
        name: b.name,
        split: b.summary.split,
        judge_success: round(b.summary.judgeSuccess),
        right_region: round(b.summary.rightRegionRate),
        small_print_success: round(b.summary.smallPrintSuccess),
      }),
    ),
    ...(row.strongest
      ? [
          JSON.stringify({
            bench: 'learning',
            seed: row.seed,
            figure: 'gain_over_strongest_baseline',
            strongest: row.strongest.name,
            strongest_success: round(row.strongest.success),
            after: round(row.after.judgeSuccess),
            points: Number(((row.after.judgeSuccess - row.strongest.success) * 100).toFixed(1)),
          }),
        ]
      : []),
    JSON.stringify({
      bench: 'learning',
      seed: row.seed,
      figure: 'seconds',
      value: Number(row.seconds.toFixed(1)),
    }),
  ];
}

/**
 * `searcher-rl ablate`: the run's warm start once (SFT and the "before" evaluation, in
 * `<runsDir>/<id>/baseline`), then each ablation's RL phases from that same checkpoint, with the
 * same seed, each in its own run folder. Writes `ablations.json` and `ablations.md` beside them.
 * With `seeds`, the baseline and the ablations run on the first seed, then the baseline on each
 * other one (`<root>/seed-<n>`: its own corpus, warm start and RL), and each seed's figures are
 * printed as JSON lines (`seedFigureLines`) and written to `seeds.json`.
 */
export async function runAblations(
  given: RunConfig,
  runOptions: RunOptions = {},
  options: { only?: readonly string[]; seeds?: readonly number[]; print?: (line: string) => void } = {},
): Promise<AblationRow[]> {
  const seeds = options.seeds ?? [];
  for (const seed of seeds)
    if (!Number.isInteger(seed))
      throw new InvalidArgumentError({
        argument: '--seeds',
        message: `must be integers, got '${String(seed)}'`,
      });
  const base = seeds.length > 0 ? withSeed(given, seeds[0]!) : given;
  const print = options.print ?? ((line: string) => runOptions.onLog?.(line));
  const selected =
    options.only && options.only.length > 0
      ? ABLATIONS.filter((a) => options.only!.includes(a.name))
      : ABLATIONS;
  for (const name of options.only ?? [])
    if (!ABLATIONS.some((a) => a.name === name))
      throw new InvalidArgumentError({
        argument: '--only',
        message: `unknown ablation '${name}'; one of ${ABLATIONS.map((a) => a.name).join(', ')}`,
      });
  await requireOptionalPackages('searcher-rl ablate', runPackages(base));
  const id = base.runId ?? `ablate-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const root = join(base.runsDir, id);
  const rows: AblationRow[] = [];
  const seedRows: SeedRow[] = [];
  const baselineDir = join(root, 'baseline');
  const ordered = [ABLATIONS[0]!, ...selected.filter((a) => a.name !== 'baseline')];
  // Every row's configuration is checked before the first is run; the folders appear with the
  // baseline's run folder (trainRun writes nothing until its own checks pass).
  const configs = ordered.map((ablation) =>
    parseRunConfig(ablation.apply({ ...base, runsDir: root, runId: ablation.name })),
  );
  const seedConfigs = seeds
    .slice(1)
    .map((seed) => parseRunConfig({ ...withSeed(given, seed), runsDir: root, runId: `seed-${seed}` }));
  for (const [index, ablation] of ordered.entries()) {
    const runDir = join(root, ablation.name);
    if (ablation.name !== 'baseline') {
      // The same warm start and "before" figures: the baseline's SFT checkpoint and evaluation.
      await mkdir(runDir, { recursive: true });
      await cp(join(baselineDir, 'sft'), join(runDir, 'sft'), {
        recursive: true,
        force: false,
        errorOnExist: false,
      });
      // With the settings it was measured under (recorded.ts): an ablation that changes one of them evaluates again.
      for (const file of ['eval-before-rl.json', RECORDED_UNDER])
        await cp(join(baselineDir, file), join(runDir, file), { force: false, errorOnExist: false });
    }
    const config = configs[index]!;
    runOptions.onLog?.(`\n== ablation ${ablation.name}: ${ablation.change}`);
    const run = await timedRun(config, runOptions);
    const row: AblationRow = {
      name: ablation.name,
      change: ablation.change,
      before: run.before,
      after: run.after,
      seconds: run.seconds,
    };
    if (selected.includes(ablation)) rows.push(row);
    // Written after each row: an interrupted run keeps what it measured (a rerun continues each folder).
    await writeJsonAtomic(join(root, 'ablations.json'), rows);
    await writeFile(join(root, 'ablations.md'), `${ablationTable(rows)}\n`);
    if (ablation.name === 'baseline' && seeds.length > 0) {
      seedRows.push({ seed: seeds[0]!, ...run });
      for (const line of seedFigureLines(seedRows[0]!)) print(line);
    }
  }
  runOptions.onLog?.(`\n${ablationTable(rows)}\n\nablation runs in ${root}`);
  for (const config of seedConfigs) {
    runOptions.onLog?.(`\n== baseline on seed ${config.seed}`);
    const row: SeedRow = { seed: config.seed, ...(await timedRun(config, runOptions)) };
    seedRows.push(row);
    await writeJsonAtomic(join(root, 'seeds.json'), seedRows);
    for (const line of seedFigureLines(row)) print(line);
  }
  if (seeds.length > 0) await writeJsonAtomic(join(root, 'seeds.json'), seedRows);
  return rows;
}
