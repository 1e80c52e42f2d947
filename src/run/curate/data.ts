import { readFile } from 'node:fs/promises';
import { createJsonlStore } from '../../adapters/store/jsonl/index';
import { closeSearcherContainer, createSearcherContainer, TOKENS } from '../../container';
import { parseSearcherConfig, type SearcherConfigInput } from '../../config';
import { createPortGateway, type PortGateway } from '../../core/calls/gateway';
import { summariseTrajectory, type EpisodeSummary } from '../../core/curation/episodes';
import type { VerificationCandidate } from '../../core/curation/verification';
import type { Trajectory } from '../../core/trajectory/trajectory';
import type { PromptRecord } from '../../core/types';
import type { Evidence } from '../../ports/types';
import type { Generator } from '../../ports/generator';
import type { Judge } from '../../ports/judge';
import { prepareEnvironment } from '../environment';
import { readRunFolderConfig } from '../folder';
import type { RunOptions } from '../progress';

export interface RunEpisodes {
  episodes: EpisodeSummary[];
  trajectories: Map<string, Trajectory>;
}

/** The episodes a store run of a run folder recorded (a phase's name, or `eval-after-rl`). */
export async function loadEpisodes(runDir: string, storeRun: string): Promise<RunEpisodes> {
  const records = await createJsonlStore({ dir: runDir }).doQuery({ kind: 'trajectory', runId: storeRun });
  const trajectories = new Map<string, Trajectory>();
  const episodes = records.map((record) => {
    const t = record.data as Trajectory;
    // A sample id is unique within a step; across steps the step keeps it apart.
    trajectories.set(`${record.step}:${t.sampleId}`, t);
    return summariseTrajectory(t, storeRun, record.step);
  });
  return { episodes, trajectories };
}

export const trajectoryOf = (run: RunEpisodes, e: EpisodeSummary) =>
  run.trajectories.get(`${e.step}:${e.sampleId}`)!;

export interface RunSetting {
  kind: 'slides' | 'data';
  searcher: SearcherConfigInput;
  /** Every training question of the run, by uid. */
  prompts: Map<string, PromptRecord>;
  /** The SQLite FTS page index, where golden pages are looked up; null when the engine is not one. */
  dbPath: string | null;
  /** The raw config (for the closed loop). */
  raw: unknown;
}

/** What a run folder was run with: its Searcher configuration (adapters included) and its questions. */
export async function runSetting(runDir: string, options: RunOptions = {}): Promise<RunSetting> {
  const config = await readRunFolderConfig(runDir);
  const env = await prepareEnvironment(config, options);
  // The run's Generator and Judge (the policy is not needed to curate).
  const { policy: _policy, ...adapters } = { ...env.adapters, ...config.searcher.adapters };
  return {
    kind: env.kind === 'slides' ? 'slides' : 'data',
    searcher: { ...config.searcher, adapters },
    prompts: new Map(env.all.map((p) => [p.uid, p])),
    dbPath: env.dbPath,
    raw: config,
  };
}

/** The Generator and Judge of a run, through the gateway (the run's call policies), and a closer. */
export async function curationGateway(
  setting: RunSetting,
): Promise<{ gateway: PortGateway; close: () => Promise<void> }> {
  const container = createSearcherContainer(setting.searcher);
  const generator = await container.getAsync<Generator>(TOKENS.Generator);
  const judge = await container.getAsync<Judge>(TOKENS.Judge);
  const gateway = createPortGateway({ generator, judge }, parseSearcherConfig(setting.searcher).calls);
  return { gateway, close: () => closeSearcherContainer(container) };
}

/** Golden pages as evidence, read from the page index (text and image), for the verifier. */
export async function goldenEvidenceFrom(
  dbPath: string | null,
): Promise<{ lookup: (candidate: VerificationCandidate) => Promise<Evidence[]>; close: () => void }> {
  if (dbPath === null) return { lookup: async () => [], close: () => undefined };
  const { openSqlite } = await import('../../provider-utils/sqlite');
  const db = openSqlite({ file: dbPath }, { readonly: true });
  const byBasename = db.prepare(
    'SELECT basename, text, image_path AS imagePath, mime, width, height FROM pages WHERE basename = ?',
  );
  return {
    async lookup(candidate) {
      const out: Evidence[] = [];
      for (const basename of candidate.episode.goldenBasenames) {
        const row = byBasename.get(basename) as
          | {
              basename: string;
              text: string;
              imagePath: string | null;
              mime: string | null;
              width: number | null;
              height: number | null;
            }
          | undefined;
        if (!row) continue;
        const bytes = row.imagePath ? await readFile(row.imagePath).catch(() => null) : null;
        out.push({
          kind: 'page',
          basename: row.basename,
          text: row.text,
          ...(bytes &&
            row.mime && {
              image: {
                mimeType: row.mime,
                width: row.width ?? 0,
                height: row.height ?? 0,
                bytes: new Uint8Array(bytes),
              },
            }),
        });
      }
      return out;
    },
    close: () => db.close(),
  };
}
