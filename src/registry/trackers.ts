import { ConfigValidationError } from '../core/errors';
import type { Tracker } from '../ports/tracker';
import type { TrackerConfig } from '../tracker-config';

/**
 * A run's tracker from its configuration (`trackers` of a run config), its adapter loaded on
 * demand; `logDir` of TensorBoard must be set (a run defaults it to its folder's `tensorboard/`).
 * `jsonl` is the run folder's own records, which every run writes: it has no adapter to build.
 */
export async function createTracker(
  config: Exclude<TrackerConfig, { type: 'jsonl' }>,
  deps: { env?: Readonly<Record<string, string | undefined>> } = {},
): Promise<Tracker> {
  if (config.type === 'tensorboard') {
    const { logDir } = config;
    if (logDir === undefined)
      throw new ConfigValidationError({
        issues: [{ field: 'trackers.logDir', message: 'the TensorBoard tracker needs a logDir' }],
      });
    return (await import('../adapters/tensorboard/index')).createTensorBoardTracker({ logDir });
  }
  const { type: _type, timeoutMs: _timeoutMs, maxRetries: _maxRetries, ...settings } = config;
  return (await import('../adapters/mlflow/index')).createMlflowTracker(settings, deps);
}
