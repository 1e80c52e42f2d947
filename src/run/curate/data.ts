import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createJsonlStore } from '../../adapters/store/jsonl/index';
import { closeSearcherContainer, createSearcherContainer, TOKENS } from '../../container';
import { parseSearcherConfig, withEnvironmentAdapters, type SearcherConfigInput } from '../../config';
import { createPortGateway, type PortGateway } from '../../core/calls/gateway';
import {
  summariseTrajectory,
  type EpisodeSummary,
  type RewardSchemeName,
} from '../../core/curation/episodes';
import type { VerificationCandidate } from '../../core/curation/verification';
import type { Trajectory } from '../../core/trajectory/trajectory';
import type { SearchR1RewardName } from '../../core/reward/score';
import type { PromptRecord } from '../../core/types';
import type { Evidence } from '../../ports/types';
import type { Generator } from '../../ports/generator';
import type { ImageOps } from '../../ports/image-ops';
import type { Judge } from '../../ports/judge';
import { prepareEnvironment } from '../environment';
import type { RunConfig } from '../config';
import { readRunFolderConfig } from '../folder';
import type { RunOptions } from '../progress';

/** A store run's episodes as summaries, with each one's full trajectory by `step:sampleId`. */
export interface RunEpisodes {
  episodes: EpisodeSummary[];
  trajectories: Map<string, Trajectory>;
}

/** The reward a run folder's episodes were scored with (`searcher.reward` of its config.json). */
async function rewardSchemeOf(
  runDir: string,
): Promise<{ scheme: RewardSchemeName; searchR1Reward?: SearchR1RewardName }> {
  const raw = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8').catch(() => '{}')) as {
    searcher?: { reward?: { scheme?: RewardSchemeName; searchR1Reward?: SearchR1RewardName } };
  };
  const reward = raw.searcher?.reward;
  return {
    scheme: reward?.scheme ?? 'searcher',
    ...(reward?.searchR1Reward && { searchR1Reward: reward.searchR1Reward }),
  };
}

/**
 * The episodes a store run of a run folder recorded (a phase's name, a focused round, or
 * `eval-after-rl`). Under the Search-R1 reward (answer mode) the reward's answer check is each
 * episode's answer score, so rounds and distillation work without a judge.
 */
export async function loadEpisodes(runDir: string, storeRun: string): Promise<RunEpisodes> {
  const reward = await rewardSchemeOf(runDir);
  const records = await createJsonlStore({ dir: runDir }).doQuery({ kind: 'trajectory', runId: storeRun });
  const trajectories = new Map<string, Trajectory>();
  const episodes = records.map((record) => {
    const t = record.data as Trajectory;
    // A sample id is unique within a step; across steps the step keeps it apart.
    trajectories.set(`${record.step}:${t.sampleId}`, t);
    return summariseTrajectory(t, storeRun, record.step, reward);
  });
  return { episodes, trajectories };
}

/**
 * A store run named on the command line: `STORE_RUN` of this run folder, or `RUN_DIR/STORE_RUN`
 * of another (a focused round run with `train --config curation/focused_round1.config.yaml`).
 */
export function storeRunRef(runDir: string, ref: string): { runDir: string; storeRun: string } {
  const at = ref.lastIndexOf('/');
  return at <= 0 ? { runDir, storeRun: ref } : { runDir: ref.slice(0, at), storeRun: ref.slice(at + 1) };
}

export const trajectoryOf = (run: RunEpisodes, e: EpisodeSummary) =>
  run.trajectories.get(`${e.step}:${e.sampleId}`)!;

/**
 * What a run folder's config says about its episodes: its environment, Searcher settings, questions
 * and page index.
 */
export interface RunSetting {
  kind: 'slides' | 'data';
  searcher: SearcherConfigInput;
  /** Every training question of the run, by uid. */
  prompts: Map<string, PromptRecord>;
  /** The SQLite FTS page index, where golden pages are looked up; null when the engine is not one. */
  dbPath: string | null;
  /** The raw config (for the closed loop). */
  raw: unknown;
  /** The run's configuration. */
  config: RunConfig;
  /** The questions the run evaluated (its split, or the dataset's evaluation file). */
  evaluation: readonly PromptRecord[];
}

/** What a run folder was run with: its Searcher configuration (adapters included) and its questions. */
export async function runSetting(runDir: string, options: RunOptions = {}): Promise<RunSetting> {
  const config = await readRunFolderConfig(runDir);
  const env = await prepareEnvironment(config, options);
  // The run's Generator and Judge (the policy is not needed to curate).
  const { policy: _policy, ...adapters } = withEnvironmentAdapters(env.adapters, config.searcher.adapters);
  return {
    kind: env.kind === 'slides' ? 'slides' : 'data',
    searcher: { ...config.searcher, adapters },
    prompts: new Map(env.all.map((p) => [p.uid, p])),
    dbPath: env.dbPath,
    raw: config,
    config,
    evaluation: env.evaluation(config.evaluation.split).prompts,
  };
}

/** The Generator and Judge of a run, through the gateway (the run's call policies), its image operations, and a closer. */
export async function curationGateway(
  setting: RunSetting,
): Promise<{ gateway: PortGateway; imageOps: ImageOps; close: () => Promise<void> }> {
  const container = createSearcherContainer(setting.searcher);
  const generator = await container.getAsync<Generator>(TOKENS.Generator);
  const judge = await container.getAsync<Judge>(TOKENS.Judge);
  const imageOps = await container.getAsync<ImageOps>(TOKENS.ImageOps);
  const gateway = createPortGateway({ generator, judge }, parseSearcherConfig(setting.searcher).calls);
  return { gateway, imageOps, close: () => closeSearcherContainer(container) };
}

/** Pages up to this many pixels on their longer side are also shown enlarged (ZOOM x) to the verifier. */
const ZOOM_BELOW_PX = 1024;
const ZOOM = 2;

/**
 * Golden pages as evidence, read from the page index (text and image), for the verifier. The
 * golden page itself is what is checked, so a small page image is also given enlarged (the whole
 * page as a crop at twice its size, through the run's ImageOps): small print that a reader needs a
 * crop for (docs/method.md#crops) is legible to it, as it is to a reviewer who zooms in, and is not
 * taken for a wrong reference.
 */
export async function goldenEvidenceFrom(
  dbPath: string | null,
  options: { imageOps?: ImageOps; signal?: AbortSignal } = {},
): Promise<{
  lookup: (candidate: {
    episode: Pick<VerificationCandidate['episode'], 'goldenBasenames'>;
  }) => Promise<Evidence[]>;
  close: () => void;
}> {
  if (dbPath === null) return { lookup: async () => [], close: () => undefined };
  const { openPageReader } = await import('../../adapters/sqlite-fts/index');
  const pages = openPageReader(dbPath);
  return {
    async lookup(candidate) {
      const out: Evidence[] = [];
      for (const basename of candidate.episode.goldenBasenames) {
        const page = await pages.page(basename);
        if (!page) continue;
        const { image } = page;
        out.push({ kind: 'page', basename: page.basename, text: page.text, ...(image && { image }) });
        const side = image ? Math.max(image.width, image.height) : 0;
        if (image && options.imageOps && side > 0 && side <= ZOOM_BELOW_PX) {
          const region = [0, 0, image.width, image.height] as const;
          // A page that cannot be enlarged is still verified on the page itself.
          const zoomed = await options.imageOps
            .doCrop(image, region, {
              minOutputSide: side * ZOOM,
              ...(options.signal && { signal: options.signal }),
            })
            .catch(() => null);
          if (zoomed)
            out.push({ kind: 'crop', basename: page.basename, image: zoomed, sourceRegion: region });
        }
      }
      return out;
    },
    close: () => pages.close(),
  };
}
