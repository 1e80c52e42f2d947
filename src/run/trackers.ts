import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createTracker } from '../registry/trackers';
import { checkPortVersion } from '../core/calls/port-version';
import { createReliableCaller, type ReliableCaller } from '../core/calls/reliable-call';
import { currentRecords } from '../core/store/records';
import type { Store } from '../ports/store';
import type {
  Tracker,
  TrackerParamValue,
  TrackerResume,
  TrackerRunStatus,
  TrackerScalars,
} from '../ports/tracker';
import type { TrackerConfig } from '../tracker-config';
import type { RunConfig } from './config';
import type { EvalSummary } from './evaluate';
import { EVAL_BEFORE, readJsonFile, writeJsonAtomic } from './folder';
import type { StepMetrics } from './step-metrics';

/** Where a run keeps its trackers' state: what continues each tracker's run, and its failures. */
export const TRACKERS_FILE = 'trackers.json';

/** Failures in a row after which a tracker is left off for the rest of the attempt (its server is down). */
const FAILURES_TO_LEAVE_OFF = 3;

/** How long the end of a run waits for its trackers' calls; a tracker's calls still running then are abandoned. */
export const TRACKERS_FINISH_GRACE_MS = 30_000;

/** One tracker's entry of `trackers.json`. */
export interface TrackerState {
  type: string;
  /** What the tracker returned at its start (TensorBoard's folder, MLflow's run id and server). */
  resume: TrackerResume | null;
  /**
   * The id of a start not yet recorded in `resume` (written before the tracker is called, so that
   * the next attempt finds the run a cut-off start made); absent in files of earlier versions.
   */
  startId?: string | null;
  /** Calls that failed after the call rule's retries, over every attempt of the run. */
  failures: number;
  /** Calls not made because the tracker was left off (three failures in a row, or a failed start). */
  dropped: number;
  /** The first failure's message (the adapters keep secrets out of it). */
  firstError: string | null;
  /** Steps logged (scalars of one step each), over every attempt. */
  steps: number;
}

/** The run's trackers as the run calls them: none of these calls waits, and none throws. */
export interface RunTrackers {
  /** The run's configuration, flattened to dotted keys, secrets left out. */
  logConfig(config: RunConfig): void;
  /** A step of a phase, at the run's step (the phases one after another). */
  logStep(phase: string, runStep: number, metrics: StepMetrics): void;
  logEvaluation(storeRun: string, runStep: number, summary: EvalSummary): void;
  /** Waits for every tracker's calls, ends their runs with `status`, writes `trackers.json`. */
  finish(status: TrackerRunStatus): Promise<Record<string, TrackerState>>;
}

/**
 * Keys whose values are credentials (the whole key, as core/secrets' fields, plus header maps):
 * never sent to a tracker. `maxTurnTokens` or `tokenizer` are settings, not credentials.
 */
const SECRET_KEY = /^(api[-_]?key|token|secret|password|client[-_]?secret|authorization|cookie|headers)$/i;

/** A configuration as dotted keys (`phases.0.learningRate`), credentials replaced by `[redacted]`. */
export function flattenParams(value: unknown, prefix = '', out: Record<string, TrackerParamValue> = {}) {
  if (value === null || typeof value !== 'object') {
    if (prefix !== '' && value !== undefined)
      out[prefix] =
        typeof value === 'number' || typeof value === 'boolean' || value === null ? value : String(value);
    return out;
  }
  for (const [key, child] of Object.entries(value)) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    if (SECRET_KEY.test(key) && child !== undefined && child !== null) out[path] = '[redacted]';
    else flattenParams(child, path, out);
  }
  return out;
}

/** A step's figures as scalars `phase/metric` (the phase's own step number is the x axis, not a figure). */
export function stepScalars(phase: string, metrics: StepMetrics): Record<string, number> {
  const values: Record<string, number> = {};
  for (const [key, value] of Object.entries(metrics))
    if (key !== 'step' && typeof value === 'number') values[`${phase}/${key}`] = value;
  return values;
}

/** An evaluation's figures as scalars `eval-before-rl/judgeSuccess`. */
export function evaluationScalars(storeRun: string, summary: EvalSummary): Record<string, number> {
  const values: Record<string, number> = {};
  for (const [key, value] of Object.entries(summary))
    if (typeof value === 'number') values[`${storeRun}/${key}`] = value;
  return values;
}

/** The first step of each phase on the run's axis: phase k starts after the planned steps of phases 1..k-1 (as the report draws them). */
export function phaseOffsets(config: RunConfig): Map<string, number> {
  const offsets = new Map<string, number>();
  let offset = 0;
  for (const phase of config.phases) {
    offsets.set(phase.name, offset);
    offset += phase.steps;
  }
  return offsets;
}

/**
 * The run's step an attempt continues at (`resumeMode: auto`): the step after the last checkpoint
 * of the first phase not done, what the trainer resumes from; everything logged from there on
 * comes again. `null` when every phase is done, or when each phase starts from a named checkpoint
 * (`resumeMode: checkpoints/step-…`): the steps run again are then not one stretch, and trackers
 * keep both values of them.
 */
export async function continuesAt(config: RunConfig, store: Store): Promise<number | null> {
  const mode = config.trainer.resumeMode;
  if (mode === 'disable') return 1;
  if (mode !== 'auto') return null;
  let offset = 0;
  for (const phase of config.phases) {
    if (phase.steps > 0) {
      const last = (await store.doQuery({ kind: 'checkpoint', runId: phase.name })).at(-1)?.step ?? 0;
      if (last < phase.steps) return offset + last + 1;
    }
    offset += phase.steps;
  }
  return null;
}

interface Lane {
  key: string;
  /** The tracker's run is open (`doStart` succeeded in this attempt). */
  started: boolean;
  config: Exclude<TrackerConfig, { type: 'jsonl' }>;
  state: TrackerState;
  tracker: Tracker | null;
  caller: ReliableCaller | null;
  queue: Promise<void>;
  inARow: number;
  off: boolean;
  warned: boolean;
}

/**
 * Opens the trackers a run config names (besides `jsonl`, the run folder's own records): each is
 * started (a resumed run continues the tracker run it started, from `trackers.json`), then gets
 * its calls in order on a queue of its own, through the call rule (timeouts, retries). The run
 * never waits for them until `finish`. A failure is counted in `trackers.json` and warned once
 * through `onLog`; after three in a row the tracker is left off for the rest of the attempt.
 * A tracker new to a run folder first gets the steps its phases already recorded.
 */
export async function openRunTrackers(args: {
  config: RunConfig;
  runId: string;
  runDir: string;
  store: Store;
  onLog?: ((line: string) => void) | undefined;
  env?: Readonly<Record<string, string | undefined>>;
  /** How long `finish` waits for the trackers' calls (default TRACKERS_FINISH_GRACE_MS). */
  finishGraceMs?: number;
}): Promise<RunTrackers> {
  const graceMs = args.finishGraceMs ?? TRACKERS_FINISH_GRACE_MS;
  const { config, runDir } = args;
  const from = await continuesAt(config, args.store);
  const path = join(runDir, TRACKERS_FILE);
  // An unreadable state file loses only the continuation: the trackers start new runs.
  const saved = (await readJsonFile<Record<string, TrackerState>>(path).catch(() => null)) ?? {};
  const configs = config.trackers.filter(
    (t): t is Exclude<TrackerConfig, { type: 'jsonl' }> => t.type !== 'jsonl',
  );
  const lanes: Lane[] = configs.map((tracker, index) => {
    const key =
      configs.filter((t) => t.type === tracker.type).length > 1 ? `${tracker.type}-${index}` : tracker.type;
    const previous = saved[key];
    return {
      key,
      config:
        tracker.type === 'tensorboard'
          ? { ...tracker, logDir: tracker.logDir ?? join(runDir, 'tensorboard') }
          : tracker,
      state: previous ?? {
        type: tracker.type,
        resume: null,
        failures: 0,
        dropped: 0,
        firstError: null,
        steps: 0,
      },
      started: false,
      tracker: null,
      caller: null,
      queue: Promise.resolve(),
      inARow: 0,
      off: false,
      warned: false,
    };
  });
  const all = { ...saved };
  // Fired when the run's end has waited long enough: what a tracker still sends is given up.
  const closing = new AbortController();
  // One write at a time (the lanes start concurrently; each write goes through the same temp file).
  let saving = Promise.resolve();
  const save = () => {
    saving = saving.then(() => {
      for (const lane of lanes) all[lane.key] = lane.state;
      return writeJsonAtomic(path, all);
    });
    return saving;
  };

  const fail = (lane: Lane, error: unknown, leaveOff = false) => {
    const message = error instanceof Error ? error.message : String(error);
    lane.state.failures++;
    lane.state.firstError ??= message;
    lane.inARow++;
    if (leaveOff || lane.inARow >= FAILURES_TO_LEAVE_OFF) lane.off = true;
    if (!lane.warned) {
      lane.warned = true;
      args.onLog?.(
        `tracker ${lane.key}: ${message}; the run goes on (failures are counted in ${TRACKERS_FILE}; after ${FAILURES_TO_LEAVE_OFF} in a row the tracker is left off)`,
      );
    }
  };

  /** Queues one call of a tracker: it runs after the tracker's earlier calls, and never throws. */
  const enqueue = (
    lane: Lane,
    operation: string,
    run: (tracker: Tracker, signal: AbortSignal) => Promise<void>,
    steps = 0,
  ) => {
    lane.queue = lane.queue.then(async () => {
      if (lane.off || !lane.tracker || !lane.caller || closing.signal.aborted || !(await start(lane))) {
        lane.state.dropped++;
        return;
      }
      const tracker = lane.tracker;
      try {
        await lane.caller.call(operation, (signal) => run(tracker, signal), { signal: closing.signal });
        lane.inARow = 0;
        lane.state.steps += steps;
      } catch (error) {
        fail(lane, error);
      }
    });
  };

  /** The evaluation and the steps a run folder already holds (those not run again), for a tracker it did not have before. */
  const backfill = async (): Promise<TrackerScalars[]> => {
    const offsets = phaseOffsets(config);
    const scalars: TrackerScalars[] = [];
    const before = await readJsonFile<EvalSummary>(join(runDir, `${EVAL_BEFORE}.json`)).catch(() => null);
    if (before) scalars.push({ step: 0, time: Date.now(), values: evaluationScalars(EVAL_BEFORE, before) });
    for (const phase of config.phases) {
      const [metrics, events] = await Promise.all([
        args.store.doQuery({ kind: 'metric', runId: phase.name }),
        args.store.doQuery({ kind: 'event', runId: phase.name }),
      ]);
      for (const record of currentRecords(metrics, events)) {
        const m = record.data as StepMetrics;
        if (from !== null && offsets.get(phase.name)! + m.step >= from) continue;
        scalars.push({
          step: offsets.get(phase.name)! + m.step,
          time: record.time,
          values: stepScalars(phase.name, m),
        });
      }
    }
    return scalars;
  };

  /**
   * Opens the tracker's run if it is not open yet (a server down at the run's start is tried again
   * with each call, until three failures in a row leave it off); a tracker new to the run folder
   * then gets what the folder already holds. False when it could not be opened.
   */
  const start = async (lane: Lane): Promise<boolean> => {
    if (lane.started) return true;
    const tracker = lane.tracker!;
    const caller = lane.caller!;
    try {
      // A new start's id reaches the run folder before the tracker is called: if this process
      // dies after the tracker made its run, the next attempt asks for that run by this id.
      if (lane.state.resume === null && !lane.state.startId) {
        lane.state.startId = randomUUID();
        await save();
      }
      const startId = lane.state.resume === null ? (lane.state.startId ?? undefined) : undefined;
      const resume = await caller.call(
        'start',
        (signal) =>
          tracker.doStart(
            {
              runName: args.runId,
              resume: lane.state.resume,
              continuesAt: from,
              ...(startId && { startId }),
            },
            { signal },
          ),
        { signal: closing.signal },
      );
      const isNew = lane.state.resume === null;
      lane.state.resume = resume;
      lane.state.startId = null;
      lane.started = true;
      lane.inARow = 0;
      await save();
      const earlier = isNew ? await backfill() : [];
      if (earlier.length > 0) {
        await caller.call('logScalars', (signal) => tracker.doLogScalars(earlier, { signal }), {
          signal: closing.signal,
        });
        lane.state.steps += earlier.filter((s) => s.step > 0).length;
      }
      return true;
    } catch (error) {
      fail(lane, error);
      return lane.started;
    }
  };

  for (const lane of lanes) {
    lane.queue = (async () => {
      try {
        // A tracker that cannot be made (no server set, a bad setting) is left off at once.
        lane.tracker = await createTracker(lane.config, args.env ? { env: args.env } : {});
        checkPortVersion('tracker', lane.tracker);
        await lane.tracker.doCheck?.();
        lane.caller = createReliableCaller('tracker', lane.tracker.provider, {
          timeoutMs: lane.config.timeoutMs,
          maxRetries: lane.config.maxRetries,
        });
      } catch (error) {
        fail(lane, error, true);
        return;
      }
      await start(lane);
    })();
  }

  const scalars = (step: number, values: Record<string, number>, steps: number) => {
    const entry: TrackerScalars = { step, time: Date.now(), values };
    for (const lane of lanes)
      enqueue(lane, 'logScalars', (t, signal) => t.doLogScalars([entry], { signal }), steps);
  };

  return {
    logConfig(runConfig) {
      const params = flattenParams(runConfig);
      for (const lane of lanes) enqueue(lane, 'logParams', (t, signal) => t.doLogParams(params, { signal }));
    },
    logStep(phase, runStep, metrics) {
      scalars(runStep, stepScalars(phase, metrics), 1);
    },
    logEvaluation(storeRun, runStep, summary) {
      scalars(runStep, evaluationScalars(storeRun, summary), 0);
    },
    async finish(status) {
      for (const lane of lanes) {
        lane.queue = lane.queue.then(async () => {
          const started = lane.tracker;
          if (!started || !lane.started || !lane.caller || closing.signal.aborted) return;
          try {
            // A tracker left off still ends its run (and closes its files) when it can.
            await lane.caller.call('finish', (signal) => started.doFinish(status, { signal }), {
              signal: closing.signal,
            });
          } catch (error) {
            fail(lane, error);
          }
        });
      }
      const grace = setTimeout(() => closing.abort(new Error(`the run ended ${graceMs} ms ago`)), graceMs);
      await Promise.all(lanes.map((lane) => lane.queue));
      clearTimeout(grace);
      if (lanes.length > 0) await save();
      return Object.fromEntries(lanes.map((lane) => [lane.key, lane.state]));
    },
  };
}

/** One line on where the figures went, e.g. `trackers: tensorboard 24 steps (runs/x/tensorboard); mlflow 24 steps (run 3f2a… at http://127.0.0.1:5000), 1 call failed`. */
export function describeTrackers(states: Readonly<Record<string, TrackerState>>): string | null {
  const parts = Object.entries(states).map(([key, state]) => {
    const where = state.resume
      ? typeof state.resume.logDir === 'string'
        ? ` (${state.resume.logDir})`
        : typeof state.resume.runId === 'string'
          ? ` (run ${state.resume.runId} at ${String(state.resume.trackingUri)})`
          : ''
      : ' (not started)';
    const failed =
      state.failures > 0
        ? `, ${state.failures} call${state.failures === 1 ? '' : 's'} failed${state.dropped > 0 ? `, ${state.dropped} not made` : ''}`
        : '';
    return `${key} ${state.steps} steps${where}${failed}`;
  });
  return parts.length === 0 ? null : `trackers: ${parts.join('; ')}`;
}
