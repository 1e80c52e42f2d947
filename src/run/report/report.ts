import { readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { InvalidArgumentError } from '../../core/errors';
import { currentRecords } from '../../core/store/records';
import { readJsonlRows } from '../../core/text-data';
import { trajectoryFromJSON } from '../../core/trajectory/serialize';
import type { RewardWeights } from '../../core/reward/combine';
import type { StoreRecord } from '../../ports/store';
import {
  difficultyBuckets,
  reportCurves,
  type BucketGroups,
  type PhaseInput,
  type StepRollout,
} from './curves';
import { reportEpisodes, spread, type EpisodeOrigin } from './episodes';
import { renderReportPage } from './page';

export { difficultyBuckets, reportCurves, rewardDefinition, emaSmooth, type ReportCurves } from './curves';

/** A store log's records as written (numbers JSON cannot hold stay tagged: trajectoryFromJSON reads them). */
async function readJsonl(path: string): Promise<unknown[]> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch {
    return [];
  }
  // As the JSONL store reads it: a partial last line (a crash mid-append) is not a record.
  return readJsonlRows(bytes.subarray(0, bytes.lastIndexOf(0x0a) + 1), path).map((row) => row.value);
}

/** A store's records of one kind in a run folder's subfolder, without those a resumed attempt superseded. */
async function phaseRecords(dir: string, kind: 'metric' | 'trajectory'): Promise<StoreRecord[]> {
  const records = (await readJsonl(join(dir, `${kind}.jsonl`))) as StoreRecord[];
  return currentRecords(records, (await readJsonl(join(dir, 'event.jsonl'))) as StoreRecord[]);
}

const rollout = (record: StoreRecord): StepRollout => ({
  runId: record.runId,
  step: record.step,
  trajectory: trajectoryFromJSON(JSON.stringify(record.data)),
});

/** The uids of small-print questions, from the corpus beside the slides (`corpus.json`; none when the run is on other data). */
async function smallPrintQuestions(slidesDir: string): Promise<Set<string>> {
  try {
    const corpus = JSON.parse(await readFile(join(dirname(slidesDir), 'corpus.json'), 'utf8')) as {
      questions: Record<string, Array<{ uid: string; metadata?: { small?: boolean } }>>;
    };
    return new Set(
      Object.values(corpus.questions).flatMap((qs) => qs.filter((q) => q.metadata?.small).map((q) => q.uid)),
    );
  } catch {
    return new Set();
  }
}

/**
 * Writes `report.html` into a run folder: curves per step over the phases (reward per phase with its
 * definition, judge success, NDCG, turns, crop rate, small-print success, and the update's loss,
 * KL, entropy, gradient norm, clip fraction and tokens/s; raw and EMA-smoothed, drawn with uPlot),
 * the difficulty buckets of each phase's rollouts and of the evaluations, and an episode browser:
 * up to `episodes` (40) episodes of each evaluation and of each phase (spread over its steps),
 * filtered by phase, step, reward and ending, each saying where it came from (phase, step, prompt,
 * rollout), with each turn's text, the retrieved slide, and a crop's region drawn on its slide
 * beside the crop at full size. One self-contained file (uPlot and images inline).
 */
export async function writeReport(
  runDir: string,
  options: { episodes?: number; bucketGroups?: BucketGroups } = {},
): Promise<string> {
  let summary: { runId: string; before: unknown; after: unknown; corpus?: { slidesDir?: string } };
  try {
    summary = JSON.parse(await readFile(join(runDir, 'summary.json'), 'utf8')) as typeof summary;
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'run',
      message: `'${runDir}' has no summary.json (is it a finished run folder?)`,
      cause: error,
    });
  }
  const config = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8')) as {
    phases: Array<{ name: string; steps: number; weights: string | RewardWeights }>;
    searcher?: { reward?: { scheme?: string } };
  };
  const bucketGroups = options.bucketGroups ?? 'step-prompt';
  const phases: PhaseInput[] = [];
  const episodeRuns: Array<{
    storeRun: string;
    kind: EpisodeOrigin['kind'];
    stepOffset: number;
    rollouts: StepRollout[];
  }> = [];
  const perRun = options.episodes ?? 40;
  let stepOffset = 0;
  const buckets: Array<{ name: string; note: string; counts: ReturnType<typeof difficultyBuckets> }> = [];
  for (const phase of config.phases) {
    const metrics = (await phaseRecords(join(runDir, phase.name), 'metric')).map(
      (r) => r.data as PhaseInput['metrics'][number],
    );
    const rollouts = (await phaseRecords(join(runDir, phase.name), 'trajectory')).map(rollout);
    phases.push({ name: phase.name, steps: phase.steps, weights: phase.weights, metrics, rollouts });
    episodeRuns.push({
      storeRun: phase.name,
      kind: 'training',
      stepOffset,
      rollouts: spread(rollouts, perRun),
    });
    stepOffset += phase.steps;
    buckets.push({
      name: phase.name,
      note: 'training rollouts, mean NDCG per (step, prompt)',
      counts: difficultyBuckets(rollouts, { groups: bucketGroups }),
    });
  }
  const slidesDir = summary.corpus?.slidesDir ?? null;
  const curves = reportCurves(phases, slidesDir ? await smallPrintQuestions(slidesDir) : new Set<string>(), {
    scheme: config.searcher?.reward?.scheme,
  });
  const folders = await readdir(runDir);
  const evaluations: Record<string, StepRollout[]> = {};
  for (const name of ['eval-before-rl', 'eval-after-rl'].filter((n) => folders.includes(n))) {
    evaluations[name] = ((await readJsonl(join(runDir, name, 'trajectory.jsonl'))) as StoreRecord[]).map(
      rollout,
    );
    buckets.push({
      name,
      note: 'evaluation, one greedy rollout per question',
      counts: difficultyBuckets(evaluations[name]),
    });
  }
  const evalDir = folders.includes('eval-after-rl') ? 'eval-after-rl' : 'eval-before-rl';
  // The evaluations first (their first questions, as the report always showed), then each phase's
  // rollouts spread over its steps; the browser filters them by phase, step, reward and ending.
  const { episodes, pages } = await reportEpisodes(
    [
      ...Object.entries(evaluations).map(([storeRun, rollouts]) => ({
        storeRun,
        kind: 'evaluation' as const,
        stepOffset: 0,
        rollouts: rollouts.slice(0, perRun),
      })),
      ...episodeRuns,
    ],
    slidesDir,
  );
  // The curation funnel and analyses, when `searcher-rl curate funnel` has written them.
  const curation = await readFile(join(runDir, 'curation', 'funnel.json'), 'utf8').then(
    (text) => JSON.parse(text) as unknown,
    () => null,
  );
  const data = {
    runId: summary.runId,
    before: summary.before,
    after: summary.after,
    curves,
    buckets,
    bucketGroups,
    evalSplit: evalDir,
    episodes,
    pages,
    curation,
  };
  const html = renderReportPage(summary.runId, data);
  const path = join(runDir, 'report.html');
  await writeFile(path, html);
  return path;
}
