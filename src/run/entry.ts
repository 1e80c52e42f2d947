import { loadWithOptionalPackages, type OptionalPackage } from '../provider-utils/optional-package';
import type { RunConfig } from './config';
import type { RunOptions } from './progress';
import type { EvalSummary } from './evaluate';
import type { TrainRunResult } from './run';

// The run's entry points for the root export. They load the run's modules (the slide environment,
// TensorFlow.js, sharp, SQLite) when called, so importing `searcher-rl` loads no vendor SDK; a
// missing package is a MissingDependencyError that says what to install.

/** What the run's modules import (the run's own policy loads TensorFlow.js through the container, with its own error). */
const RUN_PACKAGES: readonly OptionalPackage[] = [
  { name: 'sharp', install: 'npm install sharp@^0.34' },
  { name: 'libsql', install: 'npm install libsql@^0.5' },
];

const loadRun = () => loadWithOptionalPackages('searcher-rl', RUN_PACKAGES, () => import('./run'));

/**
 * The main job: the offline slide environment, or your own questions (`config.dataset`); the warm
 * start, evaluation before RL, the RL phases, evaluation after RL, all in `runsDir/runId/`. Follow
 * it with `options.onLog` / `options.onProgress`, stop it with `options.signal`; running it again
 * on the same `runId` continues it. `searcher-rl train` calls exactly this.
 */
export async function trainRun(config: RunConfig, options: RunOptions = {}): Promise<TrainRunResult> {
  return (await loadRun()).trainRun(config, options);
}

/** Evaluates a run folder's latest checkpoint on a split (slide runs) or its evaluation questions; `searcher-rl eval` calls exactly this. */
export async function evalRun(
  runDir: string,
  overrides: { split?: 'train' | 'validation' | 'test'; limit?: number | null } = {},
  options: RunOptions = {},
): Promise<EvalSummary & { checkpoint: string }> {
  return (await loadRun()).evalRun(runDir, overrides, options);
}
