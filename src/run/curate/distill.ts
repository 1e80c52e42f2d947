import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { selectRareSuccesses, sftRowFromTrajectory, type SftRow } from '../../core/curation/distill';
import { promptStats } from '../../core/curation/episodes';
import { rewriteThinks } from '../../core/curation/rewrite';
import { DEFAULT_CURATION_SETTINGS } from '../../core/curation/settings';
import { InvalidArgumentError } from '../../core/errors';
import { SEARCHER_INSTRUCTIONS } from '../../core/episode/prompt';
import type { RunOptions } from '../progress';
import { curationGateway, loadEpisodes, runSetting, trajectoryOf } from './data';
import { textFile, writeCurationFiles } from './files';
import { numberOf, type CurationValues } from './options';

export type { CurationValues } from './options';

const D = DEFAULT_CURATION_SETTINGS;

/**
 * Rare-success distillation over a store run of a run folder (docs/method.md#rare-success-distillation):
 * the selected rollouts as SFT rows (`curation/sft.parquet`, `sft.jsonl`), with `--rewrite` their
 * thinks rewritten through the run's Generator under the safety post-pass.
 */
export async function distillRun(
  runDir: string,
  phase: string,
  values: CurationValues,
  options: RunOptions,
): Promise<{
  rows: SftRow[];
  selected: ReturnType<typeof selectRareSuccesses>['selected'];
  run: Awaited<ReturnType<typeof loadEpisodes>>;
  counts: Record<string, unknown>;
}> {
  const run = await loadEpisodes(runDir, phase);
  if (run.episodes.length === 0)
    throw new InvalidArgumentError({
      argument: '--phase',
      message: `the run folder has no trajectories under '${phase}'`,
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
  let rows = selection.selected.map((e) => sftRowFromTrajectory(trajectoryOf(run, e), system));
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
    selected: selection.selected,
    run,
    counts: { ...selection.counts, rows: rows.length, ...(rewrite && { rewrite }) },
  };
}
