import { requireOptionalPackages } from '../provider-utils/optional-package';
import type { RunConfig } from './config';
import { readRunFolderConfig } from './folder';
import { runPackages } from './packages';
import type { RunOptions } from './progress';
import type { EvalSummary } from './evaluate';
import type { TrainRunResult } from './run';

// The run's entry points for the root export. They load the run's modules (the slide environment,
// TensorFlow.js, sharp, SQLite) when called, so importing `searcher-rl` loads no vendor SDK. First
// they check every optional package the run will load (the run library's, its policy's, its
// adapters'): the missing ones are named together in one MissingDependencyError with one install
// line, before anything is loaded or written.

/**
 * The main job: the offline slide environment, or your own questions (`config.dataset`); the warm
 * start, evaluation before RL, the RL phases, evaluation after RL, all in `runsDir/runId/`. Follow
 * it with `options.onLog` / `options.onProgress`, stop it with `options.signal`; running it again
 * on the same `runId` continues it. `searcher-rl train` calls exactly this.
 */
export async function trainRun(config: RunConfig, options: RunOptions = {}): Promise<TrainRunResult> {
  await requireOptionalPackages('searcher-rl train', runPackages(config));
  return (await import('./run')).trainRun(config, options);
}

/** Evaluates a run folder's latest checkpoint on a split (slide runs) or its evaluation questions; `searcher-rl eval` calls exactly this. */
export async function evalRun(
  runDir: string,
  overrides: { split?: 'train' | 'validation' | 'test'; limit?: number | null } = {},
  options: RunOptions = {},
): Promise<EvalSummary & { checkpoint: string }> {
  await requireOptionalPackages('searcher-rl eval', runPackages(await readRunFolderConfig(runDir)));
  return (await import('./run')).evalRun(runDir, overrides, options);
}
