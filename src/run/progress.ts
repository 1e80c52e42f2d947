import { redactSecretsIn } from '../core/secrets';

/** A step of a long task: rendering the corpus, the warm start's epochs, a phase's steps, an evaluation. */
export interface RunProgress {
  /** What is running: `rendering slides`, `SFT warm start`, a phase's name, `evaluating (eval-after-rl)`. */
  task: string;
  done: number;
  total: number;
  /** The latest figures, e.g. `reward 0.412 success 37.5% NDCG 0.61`. */
  detail?: string;
  /** The task's last event (`done` equals `total`, or the task stopped early). */
  finished?: boolean;
}

/** How a caller follows and stops a run: log lines, progress events, an `AbortSignal`. */
export interface RunOptions {
  signal?: AbortSignal;
  /** A line worth printing: the corpus, the policy, each evaluation's figures. */
  onLog?: (line: string) => void;
  /** Each step of each task, and its end. */
  onProgress?: (event: RunProgress) => void;
}

/** Reports one task's progress through `options.onProgress`. */
export function progressOf(
  options: RunOptions,
  task: string,
  total: number,
): { update(done: number, detail?: string): void; done(detail?: string): void } {
  return {
    update: (done, detail) =>
      options.onProgress?.({ task, done, total, ...(detail !== undefined && { detail }) }),
    done: (detail) =>
      options.onProgress?.({
        task,
        done: total,
        total,
        finished: true,
        ...(detail !== undefined && { detail }),
      }),
  };
}

/**
 * The options with their log lines and progress texts redacted of every configured secret
 * (src/core/secrets.ts) before they reach the caller's callbacks: the run's entry points take
 * their options through this.
 */
export function redactedRunOptions(options: RunOptions): RunOptions {
  const { onLog, onProgress } = options;
  return {
    ...options,
    ...(onLog && { onLog: (line: string) => onLog(redactSecretsIn(line)) }),
    ...(onProgress && {
      onProgress: (event: RunProgress) =>
        onProgress({
          ...event,
          task: redactSecretsIn(event.task),
          ...(event.detail !== undefined && { detail: redactSecretsIn(event.detail) }),
        }),
    }),
  };
}
