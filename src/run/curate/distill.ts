import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  dropThinkActionTagRows,
  selectRareSuccesses,
  sftRowFromTrajectory,
  type SftRow,
} from '../../core/curation/distill';
import { promptStats } from '../../core/curation/episodes';
import { rewriteThinks } from '../../core/curation/rewrite';
import { DEFAULT_CURATION_SETTINGS } from '../../core/curation/settings';
import { InvalidArgumentError } from '../../core/errors';
import { SEARCHER_INSTRUCTIONS } from '../../core/episode/prompt';
import type { RunOptions } from '../progress';
import type { EpisodeSummary } from '../../core/curation/episodes';
import type { Trajectory } from '../../core/trajectory/trajectory';
import { curationGateway, loadEpisodes, runSetting, trajectoryOf, type RunEpisodes } from './data';
import { textFile, writeCurationFiles } from './files';
import { numberOf, type CurationValues } from './options';

export type { CurationValues } from './options';

const D = DEFAULT_CURATION_SETTINGS;

/**
 * Rare-success distillation over store runs of a run folder (docs/method.md#rare-success-distillation):
 * the selected rollouts as SFT rows (`curation/sft.parquet`, `sft.jsonl`). Rows with an action tag
 * inside a `<think>` are dropped (docs/method.md#rare-success-distillation), with or without `--rewrite`, which rewrites the
 * thinks through the run's Generator under the safety post-pass. `phase` is one store run or
 * several (the loop distills its focused rounds together). `selected` are the rollouts of the rows kept.
 */
export async function distillRun(
  runDir: string,
  phase: string | readonly string[],
  values: CurationValues,
  options: RunOptions,
): Promise<{
  rows: SftRow[];
  selected: ReturnType<typeof selectRareSuccesses>['selected'];
  /** The trajectories of `selected`, in its order. */
  trajectories: Trajectory[];
  /** The episodes read (of the one store run: its trajectories too). */
  run: RunEpisodes;
  counts: Record<string, unknown>;
}> {
  const phases = typeof phase === 'string' ? [phase] : phase;
  const parts = new Map<string, RunEpisodes>();
  for (const storeRun of phases) parts.set(storeRun, await loadEpisodes(runDir, storeRun));
  const run: RunEpisodes =
    parts.size === 1
      ? [...parts.values()][0]!
      : { episodes: [...parts.values()].flatMap((p) => p.episodes), trajectories: new Map() };
  if (run.episodes.length === 0)
    throw new InvalidArgumentError({
      argument: '--phase',
      message: `the run folder has no trajectories under '${phases.join("', '")}'`,
    });
  const stats = promptStats(run.episodes);
  const selection = selectRareSuccesses(run.episodes, stats, {
    topK: numberOf(values, 'top-k', D.distillTopK),
    maxSuccessRate: numberOf(values, 'max-success-rate', D.distillMaxSuccessRate),
    keepZeroSearch: values['keep-zero-search'] === true,
    keepZeroNdcg: values['keep-zero-ndcg'] === true,
  });
  // The system message is the instructions the run's prompts began with (null: the protocol's own).
  const runConfig = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8')) as {
    searcher?: { episode?: { instructions?: string | null } };
  };
  const system = runConfig.searcher?.episode?.instructions ?? SEARCHER_INSTRUCTIONS;
  // An episode's runId is its store run: steps and sample ids repeat across store runs.
  const trajectory = (e: EpisodeSummary) => trajectoryOf(parts.get(e.runId)!, e);
  const all = selection.selected.map((e) => ({
    episode: e,
    row: sftRowFromTrajectory(trajectory(e), system),
  }));
  const clean = dropThinkActionTagRows(all.map((r) => r.row));
  const kept = new Set(clean.rows);
  const selected = all.filter((r) => kept.has(r.row)).map((r) => r.episode);
  let rows = clean.rows;
  let rewrite: Record<string, unknown> | null = null;
  if (values.rewrite) {
    const setting = await runSetting(runDir, options);
    const { gateway, close } = await curationGateway(setting);
    try {
      const report = await rewriteThinks(gateway, rows);
      rows = report.rows;
      rewrite = report.counts;
    } finally {
      await close();
    }
  }
  const { writeSftDataset } = await import('../../adapters/store/parquet/index');
  await writeCurationFiles(join(runDir, 'curation'), [
    { name: 'sft.parquet', write: (path) => writeSftDataset(path, rows) },
    textFile('sft.jsonl', rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : '')),
  ]);
  return {
    rows,
    selected,
    trajectories: selected.map(trajectory),
    run,
    counts: {
      ...selection.counts,
      excludedActionTagInThink: clean.dropped,
      rows: rows.length,
      ...(rewrite && { rewrite }),
    },
  };
}
