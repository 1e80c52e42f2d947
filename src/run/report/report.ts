import { readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import sharp from 'sharp';
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
import { renderReportPage } from './page';

export { difficultyBuckets, reportCurves, rewardDefinition, emaSmooth, type ReportCurves } from './curves';

interface ReportEpisode {
  question: string;
  reference: string | null;
  answer: string;
  terminated: string;
  reward: number | null;
  judge: number | null;
  ndcg: number | null;
  golden: string[];
  turns: Array<{ text: string; observation: string; images: Array<{ label: string; src: string }> }>;
}

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
 * definition, judge success, NDCG, turns, crop rate, small-print success; raw and EMA-smoothed, drawn
 * with uPlot), the difficulty buckets of each phase's rollouts and of the evaluations, and an episode
 * browser with each turn's text, the retrieved slides and crops as images, and the rewards. One
 * self-contained file (uPlot and images inline).
 */
export async function writeReport(
  runDir: string,
  options: { episodes?: number; bucketGroups?: BucketGroups } = {},
): Promise<string> {
  let summary: { runId: string; before: unknown; after: unknown; corpus: { slidesDir: string } };
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
  const buckets: Array<{ name: string; note: string; counts: ReturnType<typeof difficultyBuckets> }> = [];
  for (const phase of config.phases) {
    const metrics = (await phaseRecords(join(runDir, phase.name), 'metric')).map(
      (r) => r.data as PhaseInput['metrics'][number],
    );
    const rollouts = (await phaseRecords(join(runDir, phase.name), 'trajectory')).map(rollout);
    phases.push({ name: phase.name, steps: phase.steps, weights: phase.weights, metrics, rollouts });
    buckets.push({
      name: phase.name,
      note: 'training rollouts, mean NDCG per (step, prompt)',
      counts: difficultyBuckets(rollouts, { groups: bucketGroups }),
    });
  }
  const curves = reportCurves(phases, await smallPrintQuestions(summary.corpus.slidesDir), {
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
  const trajectories = (evaluations[evalDir] ?? []).map((r) => r.trajectory);
  const thumbnail = async (basename: string, region?: readonly number[]) => {
    try {
      let image = sharp(join(summary.corpus.slidesDir, basename));
      if (region) {
        const [x1, y1, x2, y2] = region as [number, number, number, number];
        image = image.extract({
          left: Math.floor(x1),
          top: Math.floor(y1),
          width: Math.max(1, Math.ceil(x2) - Math.floor(x1)),
          height: Math.max(1, Math.ceil(y2) - Math.floor(y1)),
        });
      }
      const png = await image
        .resize({ width: region ? 480 : 320, withoutEnlargement: false })
        .png()
        .toBuffer();
      return `data:image/png;base64,${png.toString('base64')}`;
    } catch {
      return '';
    }
  };
  const episodes: ReportEpisode[] = [];
  for (const t of trajectories.slice(0, options.episodes ?? 40)) {
    const turns: ReportEpisode['turns'] = [];
    for (const turn of t.turns) {
      const images: Array<{ label: string; src: string }> = [];
      if (turn.search?.chosenBasename)
        images.push({ label: turn.search.chosenBasename, src: await thumbnail(turn.search.chosenBasename) });
      if (turn.crop)
        images.push({
          label: `crop of ${turn.crop.basename} [${turn.crop.sourceRegion.map((v) => Math.round(v)).join(', ')}]`,
          src: await thumbnail(turn.crop.basename, turn.crop.sourceRegion),
        });
      turns.push({ text: turn.text, observation: turn.observation, images });
    }
    const detail = t.rewardDetail;
    episodes.push({
      question: t.query,
      reference: t.reference,
      answer: t.finalAnswer,
      terminated: t.terminated,
      reward: t.reward,
      judge: detail?.components.judgeScore ?? null,
      ndcg: detail?.components.ndcg ?? null,
      golden: t.goldenBasenames,
      turns,
    });
  }
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
    curation,
  };
  const html = renderReportPage(summary.runId, data);
  const path = join(runDir, 'report.html');
  await writeFile(path, html);
  return path;
}
