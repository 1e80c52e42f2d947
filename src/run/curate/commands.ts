import { readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import {
  failureCauses,
  funnelStages,
  hallucinationShare,
  ndcgJudgeDisagreements,
} from '../../core/curation/analyses';
import { assignBuckets, countBuckets } from '../../core/curation/buckets';
import { promptStats } from '../../core/curation/episodes';
import { buildRound1, buildRound2, buildRound3, type FocusedRound } from '../../core/curation/rounds';
import { DEFAULT_CURATION_SETTINGS } from '../../core/curation/settings';
import type { Verdict } from '../../core/curation/verification';
import { InvalidArgumentError } from '../../core/errors';
import { requireOptionalPackages } from '../../provider-utils/optional-package';
import { readRunFolderConfig } from '../folder';
import { curationPackages } from '../packages';
import { loadEpisodes, runSetting, storeRunRef } from './data';
import type { RunOptions } from '../progress';
import { distillRun } from './distill';
import { jsonFile, writeCurationFiles } from './files';
import {
  checkCurationCommand,
  CURATION_COMMANDS,
  numberOf,
  ROUND1_RESULTS,
  type CurationCommand,
  type CurationValues,
} from './options';
import { describeRound, roundResults, writeRoundFiles, type RoundStart } from './round-files';
import { describeVerdicts, readVerdicts, summariseVerdicts, verifyRun } from './verify';

export { CURATION_COMMANDS, summariseVerdicts, verifyRun, type CurationCommand, type CurationValues };

const D = DEFAULT_CURATION_SETTINGS;

/**
 * Runs one curation command over the run folder `runDir`, writing under `runDir/curation/`:
 * difficulty buckets, ground-truth verification, focused rounds, rare-success distillation, the
 * funnel, an import into SQLite, or the closed loop. Lines worth printing go to `options.onLog`.
 */
export async function runCurationCommand(
  command: string,
  runDir: string,
  values: CurationValues,
  options: RunOptions = {},
): Promise<void> {
  // Every option and input is checked first: a mistake writes nothing (no curation/ folder).
  const { phase1, phase2 } = await checkCurationCommand(command, runDir, values);
  // Then every optional package the command will load (the run's Generator and Judge for verify, ...), named together.
  await requireOptionalPackages(
    `searcher-rl curate ${command}`,
    curationPackages(command, await readRunFolderConfig(runDir), values),
  );
  const context = { log: (line: string) => options.onLog?.(line) };
  const out = join(runDir, 'curation');
  const write = (name: string, data: unknown) => writeCurationFiles(out, [jsonFile(name, data)]);
  const thresholds = {
    bucketLow: numberOf(values, 'low', D.bucketLow),
    bucketHigh: numberOf(values, 'high', D.bucketHigh),
  };
  const bucketsOf = async () => {
    const run = await loadEpisodes(
      runDir,
      (values.phase as string | undefined) && command === 'buckets' ? (values.phase as string) : phase1,
    );
    if (run.episodes.length === 0)
      throw new InvalidArgumentError({
        argument: '--phase',
        message: `the run folder has no trajectories under '${phase1}'`,
      });
    return assignBuckets(promptStats(run.episodes), thresholds);
  };

  switch (command) {
    case 'buckets': {
      const buckets = await bucketsOf();
      const counts = countBuckets(buckets);
      await write('buckets.json', { thresholds, counts, buckets });
      context.log(`buckets of ${buckets.length} prompts: B ${counts.B}, A ${counts.A}, 0 ${counts['0']}`);
      return;
    }
    case 'verify': {
      const verdicts = await verifyRun(runDir, phase2, values, options, phase1);
      const summary = summariseVerdicts(verdicts);
      await write('verdicts.json', summary);
      context.log(describeVerdicts(summary));
      return;
    }
    case 'rounds': {
      const setting = await runSetting(runDir, options);
      const verdicts = await readVerdicts(runDir);
      const which = Number(values.round ?? '1');
      const steps = values.steps === undefined ? null : numberOf(values, 'steps', 0);
      const latest = setting.config.phases.at(-1)?.name ?? phase2;
      let round: FocusedRound;
      let start: RoundStart;
      let from = phase2;
      if (which === 1) {
        round = buildRound1(
          await bucketsOf(),
          promptStats((await loadEpisodes(runDir, phase2)).episodes),
          verdicts,
          {
            maxScore: numberOf(values, 'round1-max', D.round1MaxScore),
          },
        );
        start = { runDir, storeRun: latest };
      } else if (which === 2) {
        const previous = await readRound(out, 'focused_round1');
        // Round 1's own results (the loop's store run, or the run of round 1's ready config).
        const results = storeRunRef(runDir, (values.results as string | undefined) ?? ROUND1_RESULTS);
        from = results.runDir === runDir ? results.storeRun : join(results.runDir, results.storeRun);
        round = buildRound2(
          previous.promptUids,
          promptStats((await loadEpisodes(results.runDir, results.storeRun)).episodes),
          verdicts,
          { maxScore: numberOf(values, 'round2-max', D.round2MaxScore) },
        );
        start = results;
      } else {
        round = buildRound3((await readRound(out, 'focused_round2')).promptUids, verdicts);
        // Started from the SFT checkpoint distilled from the focused rounds (curate loop writes it).
        start = { runDir, storeRun: 'sft-distilled' };
        from = 'focused_round2';
      }
      const written = await writeRoundFiles({ setting, runDir, round, start, steps });
      context.log(describeRound(round, written.prompts.length, from));
      context.log(
        written.configPath
          ? `next run: searcher-rl train --config ${written.configPath} (${written.steps} steps; its results: ${roundResults(setting, runDir, round)})`
          : `${round.name} has no prompts: no config written`,
      );
      return;
    }
    case 'distill': {
      const { rows, counts } = await distillRun(runDir, phase2, values, options);
      await write('distill.json', counts);
      context.log(`distilled ${rows.length} SFT rows from ${phase2}: ${JSON.stringify(counts)}`);
      return;
    }
    case 'funnel': {
      const funnel = await funnelReport(runDir, phase1, phase2, thresholds, await readVerdicts(runDir));
      await write('funnel.json', funnel);
      for (const stage of funnel.stages)
        context.log(
          `${stage.stage.padEnd(34)} ${String(stage.count).padStart(6)}${stage.note ? `  (${stage.note})` : ''}`,
        );
      context.log(
        `judge success with NDCG 0: ${funnel.disagreements.judgeSuccessNdcgZero} (same document, other page ${funnel.disagreements.sameDocumentOtherPage}; ungrounded ${funnel.disagreements.ungrounded}); hallucination share ${(funnel.hallucination.share * 100).toFixed(1)}%`,
      );
      context.log(
        `failure causes: search ${funnel.failureCauses.searchFailure}, generator ${funnel.failureCauses.generatorFailure}, ground truth ${funnel.failureCauses.groundTruthError} of ${funnel.failureCauses.failures}`,
      );
      return;
    }
    case 'import': {
      const db = values.db as string;
      const { createSqliteStore, importJsonlRuns } = await import('../../adapters/store/sqlite/index');
      await refuseForeignDatabase(db);
      // A fresh database renamed over the old one: importing again gives the same tables, never twice the records.
      const temp = `${db}.${process.pid}.importing`;
      await removeDatabase(temp);
      try {
        const store = createSqliteStore({ path: temp });
        let copied: Record<string, number>;
        try {
          copied = await importJsonlRuns(runDir, store);
        } finally {
          await store.close();
        }
        // The database with its WAL (the store's connection may leave it until the process exits), main file last.
        await removeDatabase(db);
        for (const suffix of ['-wal', '-shm', ''])
          if (await stat(`${temp}${suffix}`).catch(() => null))
            await rename(`${temp}${suffix}`, `${db}${suffix}`);
        context.log(
          `imported ${Object.entries(copied)
            .map(([run, n]) => `${run} ${n}`)
            .join(', ')} records into ${db}`,
        );
      } finally {
        await removeDatabase(temp);
      }
      return;
    }
    case 'loop': {
      const { closedLoop } = await import('./loop');
      await closedLoop(runDir, phase2, { ...values, phase1 }, options);
      return;
    }
  }
}

/** A database file and its WAL and shared-memory files. */
async function removeDatabase(path: string): Promise<void> {
  for (const suffix of ['', '-wal', '-shm']) await rm(`${path}${suffix}`, { force: true });
}

/** `import --db` replaces the file: one that is not a searcher-rl store (a page index, anything else) is refused. */
async function refuseForeignDatabase(db: string): Promise<void> {
  if ((await stat(db).catch(() => null)) === null) return;
  const { openSqlite } = await import('../../provider-utils/sqlite');
  let isStore = false;
  try {
    // Not a `mode=ro` connection: that cannot open a WAL database whose -shm file is gone (a closed store's).
    const connection = openSqlite({ file: db });
    try {
      isStore =
        connection
          .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('records', 'runs')")
          .all().length === 2;
    } finally {
      connection.close();
    }
  } catch {
    isStore = false;
  }
  if (!isStore)
    throw new InvalidArgumentError({
      argument: '--db',
      message: `'${db}' exists and is not a searcher-rl store that import wrote; import replaces the file, so give a new path`,
    });
}

async function readRound(out: string, name: string): Promise<FocusedRound> {
  return JSON.parse(await readFile(join(out, `${name}.json`), 'utf8')) as FocusedRound;
}

/**
 * The curation funnel of a run folder: buckets from phase 1, rounds from phase 2 and the verdicts,
 * failure causes and NDCG-judge disagreements, as stages and lines to print.
 */
export async function funnelReport(
  runDir: string,
  phase1: string,
  phase2: string,
  thresholds: { bucketLow: number; bucketHigh: number },
  verdicts: readonly Verdict[],
) {
  const first = await loadEpisodes(runDir, phase1);
  const second = await loadEpisodes(runDir, phase2);
  const buckets = assignBuckets(promptStats(first.episodes), thresholds);
  const stats2 = promptStats(second.episodes);
  const round1 = buildRound1(buckets, stats2, verdicts);
  // Round 2 (and 3) exist once round 1 has results of its own (curate loop's store run).
  const results1 = (await loadEpisodes(runDir, ROUND1_RESULTS)).episodes;
  const round2 = results1.length > 0 ? buildRound2(round1.promptUids, promptStats(results1), verdicts) : null;
  const round3 = round2 ? buildRound3(round2.promptUids, verdicts) : null;
  const stages = funnelStages({
    questions: buckets.length,
    buckets: countBuckets(buckets),
    bucket0Excluded: round1.counts.bucket0Excluded!,
    round1: {
      hardA: round1.counts.hardA!,
      hardAExcluded: round1.counts.hardAExcluded!,
      bucket0Kept: round1.counts.bucket0Kept!,
      total: round1.counts.total!,
    },
    ...(round2 && {
      round2: {
        lowScore: round2.counts.lowScore!,
        excluded: round2.counts.excluded!,
        total: round2.counts.total!,
        from: ROUND1_RESULTS,
      },
    }),
    ...(round3 && { round3: { excluded: round3.counts.excluded!, total: round3.counts.total! } }),
  });
  const v = summariseVerdicts(verdicts);
  return {
    phases: { phase1, phase2, phase1Episodes: first.episodes.length, phase2Episodes: second.episodes.length },
    stages,
    verification: {
      candidates: v.candidates,
      counts: v.counts,
      removed: v.removed,
      removedShare: v.removedShare,
      bucket0: v.bucket0,
    },
    disagreements: ndcgJudgeDisagreements(second.episodes),
    failureCauses: failureCauses(second.episodes, verdicts),
    hallucination: hallucinationShare(second.episodes),
  };
}
