import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import type {
  Tracker,
  TrackerParamValue,
  TrackerResume,
  TrackerRunStatus,
  TrackerScalars,
} from '../../ports/tracker';
import { headerSecrets } from '../../provider-utils/redact';
import { parseSettings } from '../../provider-utils/settings';
import { mlflowCall, mlflowErrorCode } from './rest';
import { mlflowTrackerSettingsSchema, type MlflowTrackerSettings } from './settings';

/** MLflow's limits per log-batch request (mlflow/utils/validation.py). */
const MAX_METRICS_PER_BATCH = 1000;
const MAX_PARAMS_PER_BATCH = 100;
const MAX_PARAM_VALUE_LENGTH = 6000;

/** Tags each created run with the start that made it, so that a retried start finds it. */
const START_ID_TAG = 'searcher-rl.start_id';

const STATUS: Record<TrackerRunStatus, string> = { finished: 'FINISHED', failed: 'FAILED', killed: 'KILLED' };

const chunks = <T>(items: readonly T[], size: number): T[][] =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, k) => items.slice(k * size, (k + 1) * size));

/**
 * A run's figures on an MLflow tracking server through its REST API (runs/create, runs/log-batch,
 * runs/update), with fetch: no MLflow client package. Each `do*` call is one attempt per request
 * with typed errors (a run calls them through the call rule, which retries); a log-batch sent
 * again after a lost answer adds nothing (MLflow keeps one metric per key, step, time and value).
 * A resumed run continues the MLflow run it started. The token is read from the settings or
 * MLFLOW_TRACKING_TOKEN when first needed and never appears in a message.
 */
export function createMlflowTracker(
  settings: MlflowTrackerSettings = {},
  deps: { env?: Readonly<Record<string, string | undefined>> } = {},
): Tracker & {
  /** The MLflow run (after `doStart`). */
  readonly runId: string | null;
  readonly experimentId: string | null;
} {
  const parsed = parseSettings('createMlflowTracker', mlflowTrackerSettingsSchema, settings);
  const env = deps.env ?? process.env;
  let runId: string | null = null;
  let experimentId: string | null = null;
  /** Params the MLflow run already holds (a resumed run): MLflow keeps a parameter's first value. */
  let loggedParams = new Map<string, string>();
  /** The start id of a runs/create sent whose answer did not come back. */
  let pendingStart: string | null = null;

  const runWithStartId = async (experiment: string, startId: string, options?: CallOptions) => {
    const found = await call(
      'POST',
      'runs/search',
      {
        body: {
          experiment_ids: [experiment],
          filter: `tags.\`${START_ID_TAG}\` = '${startId}'`,
          max_results: 1,
        },
      },
      options,
    );
    const runs = (found.runs ?? []) as Array<{ info: { run_id: string } }>;
    return runs[0]?.info.run_id ?? null;
  };

  const connection = () => {
    const trackingUri = parsed.trackingUri ?? (env.MLFLOW_TRACKING_URI || undefined);
    if (!trackingUri)
      throw new InvalidArgumentError({
        argument: 'trackingUri',
        message:
          'no MLflow tracking server: set trackingUri in the tracker settings (trackers: [{type: mlflow, trackingUri: http://127.0.0.1:5000}]) or the MLFLOW_TRACKING_URI environment variable',
      });
    if (!/^https?:\/\//i.test(trackingUri))
      throw new InvalidArgumentError({
        argument: 'trackingUri',
        message: `'${trackingUri}' is not an http(s) URL: this tracker talks to a tracking server's REST API; start one with \`mlflow server --backend-store-uri sqlite:///mlflow.db\` and give its URL`,
      });
    const token = parsed.token ?? (env.MLFLOW_TRACKING_TOKEN || undefined);
    const user = env.MLFLOW_TRACKING_USERNAME || undefined;
    const password = env.MLFLOW_TRACKING_PASSWORD || undefined;
    const headers: Record<string, string> = token
      ? { authorization: `Bearer ${token}` }
      : user && password
        ? { authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` }
        : {};
    return { trackingUri, headers, secrets: [token, password, ...headerSecrets(headers)] };
  };

  const call = (
    method: 'GET' | 'POST',
    path: string,
    request: { query?: Record<string, string>; body?: unknown },
    options?: CallOptions,
  ) => {
    const { trackingUri, headers, secrets } = connection();
    return mlflowCall({
      // Every call may be sent again: runs/create finds a run an earlier attempt made by its start
      // id, experiments/create finds the experiment made meanwhile.
      idempotent: true,
      baseUrl: trackingUri,
      method,
      path,
      headers,
      secrets,
      signal: options?.signal,
      ...request,
    });
  };

  const started = () => {
    if (runId === null)
      throw new InvalidArgumentError({
        argument: 'tracker',
        message: 'the MLflow tracker is not started (call doStart first)',
      });
    return runId;
  };

  const experimentIdOf = async (name: string, options?: CallOptions): Promise<string> => {
    const find = async () => {
      try {
        const found = await call(
          'GET',
          'experiments/get-by-name',
          { query: { experiment_name: name } },
          options,
        );
        return String((found.experiment as { experiment_id: string }).experiment_id);
      } catch (error) {
        if (mlflowErrorCode(error) === 'RESOURCE_DOES_NOT_EXIST') return null;
        throw error;
      }
    };
    const existing = await find();
    if (existing !== null) return existing;
    try {
      return String((await call('POST', 'experiments/create', { body: { name } }, options)).experiment_id);
    } catch (error) {
      // Made meanwhile by another run.
      if (mlflowErrorCode(error) === 'RESOURCE_ALREADY_EXISTS') {
        const made = await find();
        if (made !== null) return made;
      }
      throw error;
    }
  };

  /** The MLflow run a resumed run started, when the same server still has it (not deleted). */
  const continueRun = async (resume: TrackerResume, trackingUri: string, options?: CallOptions) => {
    if (typeof resume.runId !== 'string' || resume.trackingUri !== trackingUri) return false;
    let run: {
      info?: { lifecycle_stage?: string; experiment_id?: string };
      data?: { params?: Array<{ key: string; value: string }> };
    };
    try {
      run = (await call('GET', 'runs/get', { query: { run_id: resume.runId } }, options)).run as typeof run;
    } catch (error) {
      if (mlflowErrorCode(error) === 'RESOURCE_DOES_NOT_EXIST') return false;
      throw error;
    }
    if (run?.info?.lifecycle_stage === 'deleted') return false;
    await call('POST', 'runs/update', { body: { run_id: resume.runId, status: 'RUNNING' } }, options);
    runId = resume.runId;
    experimentId = String(run?.info?.experiment_id ?? resume.experimentId);
    loggedParams = new Map((run?.data?.params ?? []).map((p) => [p.key, p.value]));
    return true;
  };

  return {
    specificationVersion: 'v1',
    provider: 'mlflow',
    get runId() {
      return runId;
    },
    get experimentId() {
      return experimentId;
    },
    async doCheck() {
      connection();
    },
    async doStart(start, options) {
      const { trackingUri } = connection();
      if (!(start.resume && (await continueRun(start.resume, trackingUri, options)))) {
        const experiment = parsed.experiment ?? (env.MLFLOW_EXPERIMENT_NAME || 'Default');
        experimentId = await experimentIdOf(experiment, options);
        // runs/create makes a run each time it lands: an attempt whose answer was lost (in this
        // process, or in one killed before its run folder recorded the run) may have made one,
        // found again by the start id it was tagged with (so a retry makes no second run).
        const asked = start.startId ?? pendingStart;
        const earlier = asked && (await runWithStartId(experimentId, asked, options));
        // A run an earlier process made may hold params and steps already: it is continued as a resumed run.
        const continued =
          !!earlier &&
          (await continueRun({ runId: earlier, trackingUri, experimentId }, trackingUri, options));
        if (!continued) {
          pendingStart = asked ?? randomUUID();
          const tags = Object.entries({
            'searcher-rl.run_id': start.runName,
            [START_ID_TAG]: pendingStart,
            ...parsed.tags,
          }).map(([key, value]) => ({ key, value }));
          const created = await call(
            'POST',
            'runs/create',
            { body: { experiment_id: experimentId, run_name: start.runName, start_time: Date.now(), tags } },
            options,
          );
          runId = String((created.run as { info: { run_id: string } }).info.run_id);
          loggedParams = new Map();
        }
        pendingStart = null;
      }
      return { runId, experimentId, trackingUri };
    },
    async doLogParams(params: Readonly<Record<string, TrackerParamValue>>, options?: CallOptions) {
      const run = started();
      const changed: string[] = [];
      const fresh: Array<{ key: string; value: string }> = [];
      for (const [key, raw] of Object.entries(params)) {
        const value = String(raw).slice(0, MAX_PARAM_VALUE_LENGTH);
        const before = loggedParams.get(key);
        if (before === undefined) fresh.push({ key, value });
        else if (before !== value) changed.push(`${key} (${before} -> ${value})`);
      }
      for (const batch of chunks(fresh, MAX_PARAMS_PER_BATCH)) {
        await call('POST', 'runs/log-batch', { body: { run_id: run, params: batch } }, options);
        for (const p of batch) loggedParams.set(p.key, p.value);
      }
      if (changed.length > 0)
        throw new InvalidArgumentError({
          argument: 'params',
          message: `MLflow keeps a parameter's first value, and run ${run} was started with other values of ${changed.join(', ')}; the other parameters are logged (start another runId to record the new values)`,
        });
    },
    async doLogScalars(scalars: readonly TrackerScalars[], options?: CallOptions) {
      const run = started();
      // JSON has no NaN or Infinity: such values are left out.
      const metrics = scalars.flatMap((s) =>
        Object.entries(s.values)
          .filter(([, value]) => Number.isFinite(value))
          .map(([key, value]) => ({ key, value, timestamp: Math.round(s.time), step: s.step })),
      );
      for (const batch of chunks(metrics, MAX_METRICS_PER_BATCH))
        await call('POST', 'runs/log-batch', { body: { run_id: run, metrics: batch } }, options);
    },
    async doFinish(status: TrackerRunStatus, options?: CallOptions) {
      const run = started();
      await call(
        'POST',
        'runs/update',
        { body: { run_id: run, status: STATUS[status], end_time: Date.now() } },
        options,
      );
    },
  };
}
