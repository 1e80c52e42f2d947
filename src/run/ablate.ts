import { cp, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from '../core/errors';
import { requireOptionalPackages } from '../provider-utils/optional-package';
import { parseRunConfig, type RunConfig } from './config';
import { runPackages } from './packages';
import { writeJsonAtomic } from './folder';
import type { RunOptions } from './progress';
import { pct, type EvalSummary } from './evaluate';
import { trainRun } from './run';

/** One row of the ablation table: a change to the run's RL settings, everything else equal. */
export interface Ablation {
  name: string;
  /** What differs from the baseline, in words. */
  change: string;
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
    '| ablation | change | judge success before -> after | points | NDCG after | small print cropped after | small print success after | seconds |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const points = (r.after.judgeSuccess - r.before.judgeSuccess) * 100;
    lines.push(
      `| ${r.name} | ${r.change} | ${pct(r.before.judgeSuccess)} -> ${pct(r.after.judgeSuccess)} | ${points >= 0 ? '+' : ''}${points.toFixed(1)} | ${r.after.ndcg.toFixed(3)} | ${pct(r.after.smallPrintCropRate)} | ${pct(r.after.smallPrintSuccess)} | ${r.seconds.toFixed(0)} |`,
    );
  }
  return lines.join('\n');
}

/**
 * `searcher-rl ablate`: the run's warm start once (SFT and the "before" evaluation, in
 * `<runsDir>/<id>/baseline`), then each ablation's RL phases from that same checkpoint, with the
 * same seed, each in its own run folder. Writes `ablations.json` and `ablations.md` beside them.
 */
export async function runAblations(
  base: RunConfig,
  runOptions: RunOptions = {},
  options: { only?: readonly string[] } = {},
): Promise<AblationRow[]> {
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
  const baselineDir = join(root, 'baseline');
  const ordered = [ABLATIONS[0]!, ...selected.filter((a) => a.name !== 'baseline')];
  // Every row's configuration is checked before the first is run; the folders appear with the
  // baseline's run folder (trainRun writes nothing until its own checks pass).
  const configs = ordered.map((ablation) =>
    parseRunConfig(ablation.apply({ ...base, runsDir: root, runId: ablation.name })),
  );
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
      await cp(join(baselineDir, 'eval-before-rl.json'), join(runDir, 'eval-before-rl.json'), {
        force: false,
        errorOnExist: false,
      });
    }
    const config = configs[index]!;
    runOptions.onLog?.(`\n== ablation ${ablation.name}: ${ablation.change}`);
    const started = performance.now();
    const result = await trainRun(config, runOptions);
    const row: AblationRow = {
      name: ablation.name,
      change: ablation.change,
      before: result.before,
      after: result.after,
      seconds: (performance.now() - started) / 1000,
    };
    if (selected.includes(ablation)) rows.push(row);
    // Written after each row: an interrupted run keeps what it measured (a rerun continues each folder).
    await writeJsonAtomic(join(root, 'ablations.json'), rows);
    await writeFile(join(root, 'ablations.md'), `${ablationTable(rows)}\n`);
  }
  runOptions.onLog?.(`\n${ablationTable(rows)}\n\nablation runs in ${root}`);
  return rows;
}
