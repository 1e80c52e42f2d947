import { mkdir, readFile, writeFile } from 'node:fs/promises';
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
import { curationGateway, goldenEvidenceFrom, loadEpisodes, runSetting, type RunSetting } from './data';
import type { RunOptions } from '../progress';
import { distillRun, numberOf, type CurationValues } from './distill';

export type { CurationValues } from './distill';

const D = DEFAULT_CURATION_SETTINGS;

/** The curation commands (docs/method.md#data-centric-rl). */
export const CURATION_COMMANDS = [
  'buckets',
  'verify',
  'rounds',
  'distill',
  'funnel',
  'import',
  'loop',
] as const;
export type CurationCommand = (typeof CURATION_COMMANDS)[number];

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
  const context = { log: (line: string) => options.onLog?.(line) };
  const out = join(runDir, 'curation');
  await mkdir(out, { recursive: true });
  const write = (name: string, data: unknown) =>
    writeFile(
      join(out, name),
      `${JSON.stringify(data, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v), 2)}\n`,
    );
  const phase1 = (values.phase1 as string | undefined) ?? 'phase1';
  const phase2 = (values.phase2 as string | undefined) ?? (values.phase as string | undefined) ?? 'phase2';
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
      if (!values.db)
        throw new InvalidArgumentError({
          argument: '--db',
          message: 'import needs --db FILE (an SQLite database)',
        });
      const { createSqliteStore, importJsonlRuns } = await import('../../adapters/store/sqlite/index');
      const store = createSqliteStore({ path: values.db as string });
      try {
        const copied = await importJsonlRuns(runDir, store);
        context.log(
          `imported ${Object.entries(copied)
            .map(([run, n]) => `${run} ${n}`)
            .join(', ')} records into ${values.db as string}`,
        );
      } finally {
        await store.close();
      }
      return;
    }
    case 'loop': {
      const { closedLoop } = await import('./loop');
      await closedLoop(runDir, phase2, values, options);
      return;
    }
    default:
      throw new InvalidArgumentError({
        argument: 'curate',
        message: `unknown command '${command}'; see searcher-rl curate --help`,
      });
  }
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
    // Verdicts are logged too (the SQLite store derives its verdicts table from these events).
    if (verdicts.length > 0)
      await createJsonlStore({ dir: runDir }).doAppend(
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
    return verdicts;
  } finally {
    golden.close();
    await close();
  }
}

async function writeRound(out: string, round: FocusedRound, setting: RunSetting): Promise<void> {
  const prompts = round.promptUids.flatMap((uid) =>
    setting.prompts.has(uid) ? [setting.prompts.get(uid)!] : [],
  );
  const { writeRlDataset } = await import('../../adapters/store/parquet/index');
  await writeRlDataset(join(out, `${round.name}.parquet`), prompts, { split: 'train' });
  await writeFile(
    join(out, `${round.name}.jsonl`),
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
  );
  await writeFile(join(out, `${round.name}.json`), `${JSON.stringify(round, null, 2)}\n`);
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
