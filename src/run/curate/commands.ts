import { mkdir, mkdtemp, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { createJsonlStore } from '../../adapters/store/jsonl/index';
import {
  failureCauses,
  funnelStages,
  hallucinationShare,
  ndcgJudgeDisagreements,
} from '../../core/curation/analyses';
import { assignBuckets, countBuckets } from '../../core/curation/buckets';
import { promptStats } from '../../core/curation/episodes';
import { buildRound1, buildRound2, type FocusedRound } from '../../core/curation/rounds';
import { DEFAULT_CURATION_SETTINGS } from '../../core/curation/settings';
import { verificationCandidates, VERIFICATION_LABELS, type Verdict } from '../../core/curation/verification';
import { verifyCandidates } from '../../core/curation/verify';
import { InvalidArgumentError } from '../../core/errors';
import { requireOptionalPackages } from '../../provider-utils/optional-package';
import { readRunFolderConfig } from '../folder';
import { curationPackages } from '../packages';
import { curationGateway, goldenEvidenceFrom, loadEpisodes, runSetting, type RunSetting } from './data';
import type { RunOptions } from '../progress';
import { distillRun } from './distill';
import { jsonFile, textFile, writeCurationFiles } from './files';
import {
  checkCurationCommand,
  CURATION_COMMANDS,
  numberOf,
  type CurationCommand,
  type CurationValues,
} from './options';

export { CURATION_COMMANDS, type CurationCommand, type CurationValues };

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
  const readVerdicts = async (): Promise<Verdict[]> =>
    JSON.parse(await readFile(join(out, 'verdicts.json'), 'utf8').catch(() => '{"verdicts":[]}'))
      .verdicts as Verdict[];

  switch (command) {
    case 'buckets': {
      const buckets = await bucketsOf();
      const counts = countBuckets(buckets);
      await write('buckets.json', { thresholds, counts, buckets });
      context.log(`buckets of ${buckets.length} prompts: B ${counts.B}, A ${counts.A}, 0 ${counts['0']}`);
      return;
    }
    case 'verify': {
      const verdicts = await verifyRun(runDir, phase2, values, options);
      await write('verdicts.json', summariseVerdicts(verdicts));
      const byLabel = summariseVerdicts(verdicts).counts;
      context.log(
        `verified ${verdicts.length} candidates: ${VERIFICATION_LABELS.map((l) => `${l} ${byLabel[l]}`).join(', ')}; removed ${summariseVerdicts(verdicts).removed}`,
      );
      return;
    }
    case 'rounds': {
      const setting = await runSetting(runDir, options);
      const verdicts = await readVerdicts();
      const which = values.round === '2' ? 2 : 1;
      let round: FocusedRound;
      if (which === 1)
        round = buildRound1(
          await bucketsOf(),
          promptStats((await loadEpisodes(runDir, phase2)).episodes),
          verdicts,
          { maxScore: numberOf(values, 'round1-max', D.round1MaxScore) },
        );
      else {
        const previous = JSON.parse(
          await readFile(join(out, 'focused_round1.json'), 'utf8').catch(() => 'null'),
        ) as { promptUids: string[] } | null;
        if (!previous)
          throw new InvalidArgumentError({
            argument: '--round',
            message: 'round 2 needs round 1 first (curate rounds --round 1)',
          });
        round = buildRound2(
          previous.promptUids,
          promptStats((await loadEpisodes(runDir, phase2)).episodes),
          verdicts,
          { maxScore: numberOf(values, 'round2-max', D.round2MaxScore) },
        );
      }
      await writeRound(out, round, setting);
      context.log(
        `${round.name}: ${round.promptUids.length} prompts (${Object.entries(round.counts)
          .map(([k, v]) => `${k} ${v}`)
          .join(
            ', ',
          )}); budget B ${round.budget.batchSize} x n_agent ${round.budget.nAgent}, max_turns ${round.budget.maxTurns}, temperature ${round.budget.temperature}`,
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
      const funnel = await funnelReport(runDir, phase1, phase2, thresholds, await readVerdicts());
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
      await closedLoop(runDir, phase2, values, options);
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

export function summariseVerdicts(verdicts: readonly Verdict[]) {
  const counts = Object.fromEntries(
    VERIFICATION_LABELS.map((l) => [l, verdicts.filter((v) => v.label === l).length]),
  ) as Record<(typeof VERIFICATION_LABELS)[number], number>;
  const removed = counts.GT_ERROR + counts.UNCERTAIN;
  return {
    candidates: verdicts.length,
    counts,
    removed,
    removedShare: verdicts.length === 0 ? 0 : removed / verdicts.length,
    verdicts,
  };
}

export async function verifyRun(
  runDir: string,
  phase: string,
  values: CurationValues,
  options: RunOptions,
): Promise<Verdict[]> {
  const setting = await runSetting(runDir, options);
  const run = await loadEpisodes(runDir, phase);
  const candidates = verificationCandidates(run.episodes, {
    candidateNdcg: numberOf(values, 'ndcg', D.candidateNdcg),
    candidateJudgeHigh: numberOf(values, 'judge-high', D.candidateJudgeHigh),
  });
  const { gateway, close } = await curationGateway(setting);
  const golden = await goldenEvidenceFrom(setting.dbPath);
  try {
    const verdicts = await verifyCandidates(gateway, candidates, { goldenEvidence: golden.lookup });
    await replaceVerdictEvents(runDir, verdicts);
    return verdicts;
  } finally {
    golden.close();
    await close();
  }
}

/**
 * Verdicts are logged too (the SQLite store derives its verdicts table from these events), as the
 * store run `curation`: its event log is replaced as a whole, so verifying again gives the latest
 * verdicts once, not every verification's appended.
 */
async function replaceVerdictEvents(runDir: string, verdicts: readonly Verdict[]): Promise<void> {
  const staging = await mkdtemp(join(runDir, '.verdicts-'));
  try {
    await createJsonlStore({ dir: staging }).doAppend(
      verdicts.map((v) => ({
        kind: 'event' as const,
        runId: 'curation',
        step: 0,
        promptUid: v.promptUid,
        sampleId: v.sampleId,
        time: Date.now(),
        data: { type: 'verdict', ...v },
      })),
    );
    await mkdir(join(runDir, 'curation'), { recursive: true });
    const log = join(runDir, 'curation', 'event.jsonl');
    if (verdicts.length > 0) await rename(join(staging, 'curation', 'event.jsonl'), log);
    else await rm(log, { force: true });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function writeRound(out: string, round: FocusedRound, setting: RunSetting): Promise<void> {
  const prompts = round.promptUids.flatMap((uid) =>
    setting.prompts.has(uid) ? [setting.prompts.get(uid)!] : [],
  );
  const { writeRlDataset } = await import('../../adapters/store/parquet/index');
  await writeCurationFiles(out, [
    { name: `${round.name}.parquet`, write: (path) => writeRlDataset(path, prompts, { split: 'train' }) },
    textFile(
      `${round.name}.jsonl`,
      prompts
        .map((p) =>
          JSON.stringify({
            uid: p.uid,
            question: p.question,
            reference: p.reference,
            golden: p.goldenBasenames,
          }),
        )
        .join('\n') + (prompts.length ? '\n' : ''),
    ),
    jsonFile(`${round.name}.json`, round),
  ]);
}

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
  const round2 = buildRound2(round1.promptUids, stats2, verdicts);
  const stages = funnelStages({
    questions: buckets.length,
    buckets: countBuckets(buckets),
    bucket0Excluded: round1.counts.bucket0Excluded!,
    round1: {
      hardA: round1.counts.hardA!,
      bucket0Kept: round1.counts.bucket0Kept!,
      total: round1.counts.total!,
    },
    round2: {
      lowScore: round2.counts.lowScore!,
      excluded: round2.counts.excluded!,
      total: round2.counts.total!,
    },
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
    },
    disagreements: ndcgJudgeDisagreements(second.episodes),
    failureCauses: failureCauses(second.episodes, verdicts),
    hallucination: hallucinationShare(second.episodes),
  };
}
