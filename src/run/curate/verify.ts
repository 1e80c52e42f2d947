import { mkdir, mkdtemp, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createJsonlStore } from '../../adapters/store/jsonl/index';
import { assignBuckets } from '../../core/curation/buckets';
import { promptStats } from '../../core/curation/episodes';
import { DEFAULT_CURATION_SETTINGS } from '../../core/curation/settings';
import {
  bucketZeroCandidates,
  VERIFICATION_LABELS,
  verificationCandidates,
  type Verdict,
} from '../../core/curation/verification';
import { verifyCandidates } from '../../core/curation/verify';
import { progressOf, type RunOptions } from '../progress';
import { curationGateway, goldenEvidenceFrom, loadEpisodes, runSetting } from './data';
import { numberOf, type CurationValues } from './options';

const D = DEFAULT_CURATION_SETTINGS;

/** Verdicts counted by label, the share removed, and bucket 0's review on its own. */
export function summariseVerdicts(verdicts: readonly Verdict[]) {
  const counts = Object.fromEntries(
    VERIFICATION_LABELS.map((l) => [l, verdicts.filter((v) => v.label === l).length]),
  ) as Record<(typeof VERIFICATION_LABELS)[number], number>;
  const removed = counts.GT_ERROR + counts.UNCERTAIN;
  const reviews = verdicts.filter((v) => v.reason === 'bucket0_review');
  const reviewRemoved = reviews.filter((v) => v.label === 'GT_ERROR' || v.label === 'UNCERTAIN').length;
  return {
    candidates: verdicts.length,
    counts,
    removed,
    removedShare: verdicts.length === 0 ? 0 : removed / verdicts.length,
    /** Bucket 0 reviewed with the golden page (docs/method.md#difficulty-buckets: 55 of 637 removed, 8.6%). */
    bucket0: {
      reviewed: reviews.length,
      removed: reviewRemoved,
      removedShare: reviews.length === 0 ? 0 : reviewRemoved / reviews.length,
    },
    verdicts,
  };
}

/** The line `curate verify` prints: the labels, the share removed, and bucket 0's review on its own. */
export function describeVerdicts(summary: ReturnType<typeof summariseVerdicts>): string {
  const { counts, bucket0 } = summary;
  return `verified ${summary.candidates} candidates: ${VERIFICATION_LABELS.map((l) => `${l} ${counts[l]}`).join(', ')}; removed ${summary.removed} (${(summary.removedShare * 100).toFixed(1)}%); bucket 0 reviewed with the golden page: ${bucket0.reviewed}, removed ${bucket0.removed} (${(bucket0.removedShare * 100).toFixed(1)}%)`;
}

/** The verdicts `curate verify` wrote (none when it has not run). */
export async function readVerdicts(runDir: string): Promise<Verdict[]> {
  return JSON.parse(
    await readFile(join(runDir, 'curation', 'verdicts.json'), 'utf8').catch(() => '{"verdicts":[]}'),
  ).verdicts as Verdict[];
}

/**
 * Ground-truth verification of a run folder (docs/method.md#ground-truth-verification): the
 * rollouts of `phase` (phase 2) that found the evidence but were judged wrong, and every bucket-0
 * prompt of `phase1`'s buckets (no rollout of theirs finds the golden page, so a wrong golden page
 * or reference would otherwise never be checked), each through the run's Generator given the
 * golden page and its Judge. Progress on `options.onProgress` ('verifying'), verdicts logged.
 */
export async function verifyRun(
  runDir: string,
  phase: string,
  values: CurationValues,
  options: RunOptions,
  phase1 = (values.phase1 as string | undefined) ?? 'phase1',
): Promise<Verdict[]> {
  const setting = await runSetting(runDir, options);
  const run = await loadEpisodes(runDir, phase);
  const first = await loadEpisodes(runDir, phase1);
  const buckets = assignBuckets(promptStats(first.episodes), {
    bucketLow: numberOf(values, 'low', D.bucketLow),
    bucketHigh: numberOf(values, 'high', D.bucketHigh),
  });
  const candidates = [
    ...verificationCandidates(run.episodes, {
      candidateNdcg: numberOf(values, 'ndcg', D.candidateNdcg),
      candidateJudgeHigh: numberOf(values, 'judge-high', D.candidateJudgeHigh),
    }),
    ...bucketZeroCandidates(buckets, first.episodes),
  ];
  const { gateway, imageOps, close } = await curationGateway(setting);
  const golden = await goldenEvidenceFrom(setting.dbPath, {
    imageOps,
    ...(options.signal && { signal: options.signal }),
  });
  const progress = progressOf(options, 'verifying', candidates.length);
  const labels: Record<string, number> = {};
  try {
    const verdicts = await verifyCandidates(gateway, candidates, {
      goldenEvidence: golden.lookup,
      ...(options.signal && { signal: options.signal }),
      onProgress: (done) => progress.update(done),
    });
    for (const v of verdicts) labels[v.label] = (labels[v.label] ?? 0) + 1;
    progress.done(
      Object.entries(labels)
        .map(([label, n]) => `${label} ${n}`)
        .join(', ') || 'no candidates',
    );
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
