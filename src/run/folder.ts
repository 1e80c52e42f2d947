import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { createJsonlStore } from '../adapters/store/jsonl/index';
import { InvalidArgumentError } from '../core/errors';
import { redactDeep, withoutSecretFields } from '../core/secrets';
import type { Store } from '../ports/store';
import { parseRunConfig, type RunConfig } from './config';

/**
 * A run folder, `runsDir/runId/` (docs/architecture.md#the-run-folder):
 *
 * - `config.json`: the run's configuration, defaults filled in;
 * - one store run per folder: `sft/` (the warm start), each phase (`phase1/`, ...), each evaluation
 *   (`eval-before-rl/`, `eval-after-rl/`, `eval-<split>/` or `eval-dataset/`), curation's
 *   (`sft-distilled/`, `focused-round1/`); each holds `trajectory.jsonl`, `reward.jsonl`,
 *   `metric.jsonl`, `event.jsonl`, `checkpoint.jsonl` and `checkpoints/` (src/run/checkpoints.ts);
 * - `eval-before-rl.json`, `eval-after-rl.json`, `eval-<split>.json`: evaluation summaries;
 * - `reader-ceiling.json`, `baselines.json`, and `recorded-under.json`: the settings these and
 *   `eval-before-rl.json` were measured under (recorded.ts: a continued run reuses them only under
 *   the same);
 * - `summary.json`, `report.html`, `curation/`.
 */
export const RUN_FILES = {
  config: 'config.json',
  summary: 'summary.json',
  report: 'report.html',
  curation: 'curation',
} as const;

/** The store runs of the evaluations before and after the RL phases. */
export const EVAL_BEFORE = 'eval-before-rl';
/** The store run of the evaluation after the RL phases. */
export const EVAL_AFTER = 'eval-after-rl';

/**
 * Temp file then rename: a process killed mid-write leaves the previous file or none, never half
 * of one. No configured secret is written (src/core/secrets.ts).
 */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  await writeFile(`${path}.tmp`, `${JSON.stringify(redactDeep(value), null, 2)}\n`);
  await rename(`${path}.tmp`, path);
}

/** A JSON file of the run folder, or null when absent. */
export async function readJsonFile<T>(path: string): Promise<T | null> {
  return readFile(path, 'utf8').then(
    (text) => JSON.parse(text) as T,
    () => null,
  );
}

/** The run folder's store: the JSONL records and blobs of its store runs. */
export function runStore(runDir: string): Store {
  return createJsonlStore({ dir: runDir });
}

/** Deletes a store run's folder (an evaluation replaces the previous one of the same name: the store is append-only). */
export async function clearStoreRun(runDir: string, storeRun: string): Promise<void> {
  await rm(join(runDir, storeRun), { recursive: true, force: true });
}

/** An existing run folder's id and path (the id is its folder name). */
export function existingRunFolder(runDir: string): { runId: string; runDir: string } {
  return { runId: basename(resolve(runDir)), runDir };
}

/** The configuration a run folder was run with (its `config.json`). */
export async function readRunFolderConfig(runDir: string): Promise<RunConfig> {
  const path = join(runDir, RUN_FILES.config);
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(path, 'utf8'));
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'run',
      message: `'${runDir}' has no readable ${RUN_FILES.config} (is it a run folder?)`,
      cause: error,
    });
  }
  return parseRunConfig(raw, path);
}

/** A run folder about to be opened: its id and path, and whether it exists already. */
export interface PlannedRunFolder {
  runId: string;
  runDir: string;
  exists: boolean;
}

/**
 * The run folder of `config` (a new one with a timestamped id when `runId` is unset), checked but
 * not written: continuing a folder needs the same environment, policy, warm start and seed as
 * before; how sessions share forwards, which engines run rollouts and gradients, and on how many
 * threads and lanes change the model's numbers in their last bits only, so a folder may continue
 * with another setting of those. The folder's config.json is parsed as `config` was, so a setting
 * added since it was written compares at its default. Credentials take no part in the comparison
 * (`config.json` holds none).
 */
export async function planRunFolder(given: RunConfig): Promise<PlannedRunFolder> {
  const config = withoutSecretFields(given);
  const runId = config.runId ?? `run-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  const runDir = join(config.runsDir, runId);
  const raw = await readJsonFile<RunConfig>(join(runDir, RUN_FILES.config));
  if (raw) {
    // Parsed as `config` was (readRunFolderConfig's way): a config.json written before a setting
    // existed gets its default, in the schema's order, so only settings that differ refuse.
    let previous: RunConfig = raw;
    try {
      previous = withoutSecretFields(parseRunConfig(raw));
    } catch {
      // A config.json this version cannot read: compared as written (and refused where it differs).
    }
    const part = (c: RunConfig, key: (typeof KEPT)[number]) =>
      JSON.stringify(
        key === 'policy' && c.policy
          ? {
              ...c.policy,
              coalesceSessions: null,
              rollouts: null,
              training: null,
              trainingThreads: null,
              trainingLanes: null,
            }
          : c[key],
      );
    for (const key of KEPT) {
      if (part(previous, key) !== part(config, key)) {
        throw new InvalidArgumentError({
          argument: `config.${key}`,
          message: `the run folder '${runDir}' was started with other '${key}' settings; use another runId to start afresh`,
        });
      }
    }
  }
  return { runId, runDir, exists: raw !== null };
}

/**
 * Creates the planned folder (or continues it) and writes its `config.json`: once every check has
 * passed. `config.json` holds no credential: `apiKey` fields are left out (a run continued from the
 * folder reads its keys from the environment) and credential headers are `[redacted]`.
 */
export async function commitRunFolder(config: RunConfig, folder: PlannedRunFolder): Promise<void> {
  await mkdir(folder.runDir, { recursive: true });
  await writeJsonAtomic(join(folder.runDir, RUN_FILES.config), withoutSecretFields(config));
}

/** Creates (or continues) the run folder of `config` and writes its `config.json` (planRunFolder, then commitRunFolder). */
export async function openRunFolder(config: RunConfig): Promise<{ runId: string; runDir: string }> {
  const folder = await planRunFolder(config);
  await commitRunFolder(config, folder);
  return { runId: folder.runId, runDir: folder.runDir };
}

const KEPT = ['dataset', 'corpus', 'policy', 'sft', 'seed'] as const;
