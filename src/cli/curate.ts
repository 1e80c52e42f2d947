import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createJsonlStore } from '../adapters/store/jsonl/index';
import { failureCauses, funnelStages, hallucinationShare, ndcgJudgeDisagreements } from '../core/curation/analyses';
import { assignBuckets, countBuckets } from '../core/curation/buckets';
import { selectRareSuccesses, sftRowFromTrajectory, type SftRow } from '../core/curation/distill';
import { promptStats } from '../core/curation/episodes';
import { rewriteThinks } from '../core/curation/rewrite';
import { buildRound1, buildRound2, type FocusedRound } from '../core/curation/rounds';
import { DEFAULT_CURATION_SETTINGS } from '../core/curation/settings';
import { verificationCandidates, VERIFICATION_LABELS, type Verdict } from '../core/curation/verification';
import { verifyCandidates } from '../core/curation/verify';
import { InvalidArgumentError } from '../core/errors';
import { SEARCHER_INSTRUCTIONS } from '../core/episode/prompt';
import { curationGateway, goldenEvidenceFrom, loadEpisodes, runSetting, trajectoryOf, type RunSetting } from '../run/curate/data';
import type { RunContext } from '../run/train';

const D = DEFAULT_CURATION_SETTINGS;
export const CURATE_HELP = `searcher-rl curate <command> --run DIR [options]

  Data-centric RL over a run folder (docs/method.md#data-centric-rl); everything is written under
  DIR/curation/. A "store run" is a phase's name in the run folder (phase1, phase2, ...).

  buckets  [--phase phase1] [--low ${D.bucketLow}] [--high ${D.bucketHigh}]
           difficulty buckets on mean NDCG per prompt: B > high, A in [low, high], 0 < low
  verify   [--phase phase2] [--ndcg ${D.candidateNdcg}] [--judge-high ${D.candidateJudgeHigh}]
           ground-truth verification of the candidates (judge 0, or 0 < judge <= judge-high, with
           NDCG >= ndcg) through the run's Generator (given the golden page) and Judge; labels
           GT_ERROR, GEN_ERROR, UNCERTAIN, BOTH_WRONG, FORMAT_DIFF; verdicts.json
  rounds   [--phase1 phase1] [--phase2 phase2] [--round 1|2] [--round1-max ${D.round1MaxScore}] [--round2-max ${D.round2MaxScore}]
           focused round 1 (bucket A with mean score <= round1-max, plus verified bucket 0) or
           round 2 (round-1 prompts scoring <= round2-max in --phase2, minus GT errors), written as
           focused_roundN.parquet (verl/Search-R1 layout) and .jsonl, with its budget
  distill  [--phase phase2] [--top-k ${D.distillTopK}] [--max-success-rate ${D.distillMaxSuccessRate}] [--keep-zero-search] [--keep-zero-ndcg] [--rewrite]
           rare-success SFT data: sft.parquet and sft.jsonl (messages, uid, format_version);
           --rewrite: think-only rewriting through the Generator with the safety post-pass
  funnel   [--phase1 phase1] [--phase2 phase2]
           the funnel with counts, NDCG-vs-judge disagreements, failure causes, hallucination
           share: funnel.json (and a section of report.html)
  import   --db FILE   the run folder's JSONL logs into an SQLite store
  loop     [--phase phase2] [--epochs 4] [--steps 5]   (offline slide runs)
           the closed loop: distill, SFT the policy on it (store run sft-distilled), then focused
           round 1 from that checkpoint (store run focused-round1) with the round's budget
`;

const OPTIONS = {
  run: { type: 'string' }, phase: { type: 'string' }, phase1: { type: 'string' }, phase2: { type: 'string' }, low: { type: 'string' }, high: { type: 'string' }, ndcg: { type: 'string' }, 'judge-high': { type: 'string' },
  round: { type: 'string' }, 'round1-max': { type: 'string' }, 'round2-max': { type: 'string' }, 'top-k': { type: 'string' }, 'max-success-rate': { type: 'string' }, 'keep-zero-search': { type: 'boolean' }, 'keep-zero-ndcg': { type: 'boolean' },
  rewrite: { type: 'boolean' }, db: { type: 'string' }, epochs: { type: 'string' }, steps: { type: 'string' }, help: { type: 'boolean' },
} as const;

type Values = Record<string, string | boolean | undefined>;
const numberOf = (values: Values, name: string, fallback: number) => {
  const raw = values[name];
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n)) throw new InvalidArgumentError(`--${name}`, `must be a number, got '${String(raw)}'`);
  return n;
};

export async function curateCommand(argv: string[], context: RunContext = { log: (line) => process.stdout.write(`${line}\n`), stream: process.stderr }): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === 'help') return (process.stdout.write(CURATE_HELP), 0);
  let values: Values;
  try {
    values = parseArgs({ args: rest, options: OPTIONS, strict: true }).values as Values;
  } catch (error) {
    throw new InvalidArgumentError('curate', `${(error as Error).message}; see searcher-rl curate --help`);
  }
  if (values.help) return (process.stdout.write(CURATE_HELP), 0);
  const runDir = values.run as string | undefined;
  if (!runDir) throw new InvalidArgumentError('--run', 'curate needs --run DIR (a run folder)');
  const out = join(runDir, 'curation');
  await mkdir(out, { recursive: true });
  const write = (name: string, data: unknown) => writeFile(join(out, name), `${JSON.stringify(data, (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v), 2)}\n`);
  const phase1 = (values.phase1 as string | undefined) ?? 'phase1';
  const phase2 = (values.phase2 as string | undefined) ?? (values.phase as string | undefined) ?? 'phase2';
  const thresholds = { bucketLow: numberOf(values, 'low', D.bucketLow), bucketHigh: numberOf(values, 'high', D.bucketHigh) };
  const bucketsOf = async () => {
    const run = await loadEpisodes(runDir, (values.phase as string | undefined) && command === 'buckets' ? (values.phase as string) : phase1);
    if (run.episodes.length === 0) throw new InvalidArgumentError('--phase', `the run folder has no trajectories under '${phase1}'`);
    return assignBuckets(promptStats(run.episodes), thresholds);
  };
  const readVerdicts = async (): Promise<Verdict[]> => JSON.parse(await readFile(join(out, 'verdicts.json'), 'utf8').catch(() => '{"verdicts":[]}')).verdicts as Verdict[];

  switch (command) {
    case 'buckets': {
      const buckets = await bucketsOf();
      const counts = countBuckets(buckets);
      await write('buckets.json', { thresholds, counts, buckets });
      context.log(`buckets of ${buckets.length} prompts: B ${counts.B}, A ${counts.A}, 0 ${counts['0']}`);
      return 0;
    }
    case 'verify': {
      const verdicts = await verifyRun(runDir, phase2, values, context);
      await write('verdicts.json', summariseVerdicts(verdicts));
      const byLabel = summariseVerdicts(verdicts).counts;
      context.log(`verified ${verdicts.length} candidates: ${VERIFICATION_LABELS.map((l) => `${l} ${byLabel[l]}`).join(', ')}; removed ${summariseVerdicts(verdicts).removed}`);
      return 0;
    }
    case 'rounds': {
      const setting = await runSetting(runDir, context);
      const verdicts = await readVerdicts();
      const which = values.round === '2' ? 2 : 1;
      let round: FocusedRound;
      if (which === 1) round = buildRound1(await bucketsOf(), promptStats((await loadEpisodes(runDir, phase2)).episodes), verdicts, { maxScore: numberOf(values, 'round1-max', D.round1MaxScore) });
      else {
        const previous = JSON.parse(await readFile(join(out, 'focused_round1.json'), 'utf8').catch(() => 'null')) as { promptUids: string[] } | null;
        if (!previous) throw new InvalidArgumentError('--round', 'round 2 needs round 1 first (curate rounds --round 1)');
        round = buildRound2(previous.promptUids, promptStats((await loadEpisodes(runDir, phase2)).episodes), verdicts, { maxScore: numberOf(values, 'round2-max', D.round2MaxScore) });
      }
      await writeRound(out, round, setting);
      context.log(`${round.name}: ${round.promptUids.length} prompts (${Object.entries(round.counts).map(([k, v]) => `${k} ${v}`).join(', ')}); budget B ${round.budget.batchSize} x n_agent ${round.budget.nAgent}, max_turns ${round.budget.maxTurns}, temperature ${round.budget.temperature}`);
      return 0;
    }
    case 'distill': {
      const { rows, counts } = await distillRun(runDir, phase2, values, context);
      await write('distill.json', counts);
      context.log(`distilled ${rows.length} SFT rows from ${phase2}: ${JSON.stringify(counts)}`);
      return 0;
    }
    case 'funnel': {
      const funnel = await funnelReport(runDir, phase1, phase2, thresholds, await readVerdicts());
      await write('funnel.json', funnel);
      for (const stage of funnel.stages) context.log(`${stage.stage.padEnd(34)} ${String(stage.count).padStart(6)}${stage.note ? `  (${stage.note})` : ''}`);
      context.log(`judge success with NDCG 0: ${funnel.disagreements.judgeSuccessNdcgZero} (same document, other page ${funnel.disagreements.sameDocumentOtherPage}; ungrounded ${funnel.disagreements.ungrounded}); hallucination share ${(funnel.hallucination.share * 100).toFixed(1)}%`);
      context.log(`failure causes: search ${funnel.failureCauses.searchFailure}, generator ${funnel.failureCauses.generatorFailure}, ground truth ${funnel.failureCauses.groundTruthError} of ${funnel.failureCauses.failures}`);
      return 0;
    }
    case 'import': {
      if (!values.db) throw new InvalidArgumentError('--db', 'import needs --db FILE (an SQLite database)');
      const { createSqliteStore, importJsonlRuns } = await import('../adapters/store/sqlite/index');
      const store = createSqliteStore({ path: values.db as string });
      try {
        const copied = await importJsonlRuns(runDir, store);
        context.log(`imported ${Object.entries(copied).map(([run, n]) => `${run} ${n}`).join(', ')} records into ${values.db as string}`);
      } finally {
        await store.close();
      }
      return 0;
    }
    case 'loop': {
      const { closedLoop } = await import('../run/curate/loop');
      await closedLoop(runDir, phase2, values, context);
      return 0;
    }
    default:
      throw new InvalidArgumentError('curate', `unknown command '${command}'; see searcher-rl curate --help`);
  }
}

export function summariseVerdicts(verdicts: readonly Verdict[]) {
  const counts = Object.fromEntries(VERIFICATION_LABELS.map((l) => [l, verdicts.filter((v) => v.label === l).length])) as Record<(typeof VERIFICATION_LABELS)[number], number>;
  const removed = counts.GT_ERROR + counts.UNCERTAIN;
  return { candidates: verdicts.length, counts, removed, removedShare: verdicts.length === 0 ? 0 : removed / verdicts.length, verdicts };
}

export async function verifyRun(runDir: string, phase: string, values: Values, context: RunContext): Promise<Verdict[]> {
  const setting = await runSetting(runDir, context);
  const run = await loadEpisodes(runDir, phase);
  const candidates = verificationCandidates(run.episodes, { candidateNdcg: numberOf(values, 'ndcg', D.candidateNdcg), candidateJudgeHigh: numberOf(values, 'judge-high', D.candidateJudgeHigh) });
  const { gateway, close } = await curationGateway(setting);
  const golden = await goldenEvidenceFrom(setting.dbPath);
  try {
    const verdicts = await verifyCandidates(gateway, candidates, { goldenEvidence: golden.lookup });
    // Verdicts are logged too (the SQLite store derives its verdicts table from these events).
    if (verdicts.length > 0) await createJsonlStore({ dir: runDir }).doAppend(verdicts.map((v) => ({ kind: 'event' as const, runId: 'curation', step: 0, promptUid: v.promptUid, sampleId: v.sampleId, time: Date.now(), data: { type: 'verdict', ...v } })));
    return verdicts;
  } finally {
    golden.close();
    await close();
  }
}

async function writeRound(out: string, round: FocusedRound, setting: RunSetting): Promise<void> {
  const prompts = round.promptUids.flatMap((uid) => (setting.prompts.has(uid) ? [setting.prompts.get(uid)!] : []));
  const { writeRlDataset } = await import('../adapters/store/parquet/index');
  await writeRlDataset(join(out, `${round.name}.parquet`), prompts, { split: 'train' });
  await writeFile(join(out, `${round.name}.jsonl`), prompts.map((p) => JSON.stringify({ uid: p.uid, question: p.question, reference: p.reference, golden: p.goldenBasenames })).join('\n') + (prompts.length ? '\n' : ''));
  await writeFile(join(out, `${round.name}.json`), `${JSON.stringify(round, null, 2)}\n`);
}

export async function distillRun(runDir: string, phase: string, values: Values, context: RunContext): Promise<{ rows: SftRow[]; selected: ReturnType<typeof selectRareSuccesses>['selected']; run: Awaited<ReturnType<typeof loadEpisodes>>; counts: Record<string, unknown> }> {
  const run = await loadEpisodes(runDir, phase);
  if (run.episodes.length === 0) throw new InvalidArgumentError('--phase', `the run folder has no trajectories under '${phase}'`);
  const stats = promptStats(run.episodes);
  const selection = selectRareSuccesses(run.episodes, stats, { topK: numberOf(values, 'top-k', D.distillTopK), maxSuccessRate: numberOf(values, 'max-success-rate', D.distillMaxSuccessRate), keepZeroSearch: values['keep-zero-search'] === true, keepZeroNdcg: values['keep-zero-ndcg'] === true });
  // The system message is the instructions the run's prompts began with (null: the protocol's own).
  const runConfig = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8')) as { searcher?: { episode?: { instructions?: string | null } } };
  const system = runConfig.searcher?.episode?.instructions ?? SEARCHER_INSTRUCTIONS;
  let rows = selection.selected.map((e) => sftRowFromTrajectory(trajectoryOf(run, e), system));
  let rewrite: Record<string, unknown> | null = null;
  if (values.rewrite) {
    const setting = await runSetting(runDir, context);
    const { gateway, close } = await curationGateway(setting);
    try {
      const report = await rewriteThinks(gateway, rows);
      rows = report.rows;
      rewrite = report.counts;
    } finally {
      await close();
    }
  }
  const out = join(runDir, 'curation');
  const { writeSftDataset } = await import('../adapters/store/parquet/index');
  await writeSftDataset(join(out, 'sft.parquet'), rows);
  await writeFile(join(out, 'sft.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : ''));
  return { rows, selected: selection.selected, run, counts: { ...selection.counts, rows: rows.length, ...(rewrite && { rewrite }) } };
}

export async function funnelReport(runDir: string, phase1: string, phase2: string, thresholds: { bucketLow: number; bucketHigh: number }, verdicts: readonly Verdict[]) {
  const first = await loadEpisodes(runDir, phase1);
  const second = await loadEpisodes(runDir, phase2);
  const buckets = assignBuckets(promptStats(first.episodes), thresholds);
  const stats2 = promptStats(second.episodes);
  const round1 = buildRound1(buckets, stats2, verdicts);
  const round2 = buildRound2(round1.promptUids, stats2, verdicts);
  const stages = funnelStages({ questions: buckets.length, buckets: countBuckets(buckets), bucket0Excluded: round1.counts.bucket0Excluded!, round1: { hardA: round1.counts.hardA!, bucket0Kept: round1.counts.bucket0Kept!, total: round1.counts.total! }, round2: { lowScore: round2.counts.lowScore!, excluded: round2.counts.excluded!, total: round2.counts.total! } });
  const v = summariseVerdicts(verdicts);
  return {
    phases: { phase1, phase2, phase1Episodes: first.episodes.length, phase2Episodes: second.episodes.length },
    stages,
    verification: { candidates: v.candidates, counts: v.counts, removed: v.removed, removedShare: v.removedShare },
    disagreements: ndcgJudgeDisagreements(second.episodes),
    failureCauses: failureCauses(second.episodes, verdicts),
    hallucination: hallucinationShare(second.episodes),
  };
}
