import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { serverPerTest } from '../../../test/support/server-per-test';
import { FakeMlflow } from '../../../test/support/fake-mlflow';
import { createReliableCaller } from '../../core/calls/reliable-call';
import { InvalidArgumentError, ProviderCallError } from '../../core/errors';
import { createMlflowTracker } from './tracker';

const TOKEN = 'mlflowcanary000000000000000000001';
const server = serverPerTest(() => FakeMlflow.start());

describe('createMlflowTracker', () => {
  it('creates the experiment and a run, logs params and metrics in batches, and ends the run', async () => {
    const tracker = createMlflowTracker({ trackingUri: server().url, experiment: 'searcher', token: TOKEN });
    const resume = await tracker.doStart({ runName: 'demo-run', resume: null, continuesAt: null });
    expect(server().calls('experiments/get-by-name')[0]!.query.get('experiment_name')).toBe('searcher');
    expect(server().calls('experiments/create')[0]!.json).toEqual({ name: 'searcher' });
    const create = server().calls('runs/create')[0]!;
    expect(create.json).toMatchObject({
      experiment_id: '1',
      run_name: 'demo-run',
      tags: [
        { key: 'searcher-rl.run_id', value: 'demo-run' },
        { key: 'searcher-rl.start_id', value: expect.stringMatching(/^[0-9a-f-]{36}$/) },
      ],
    });
    expect(create.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(resume).toEqual({ runId: tracker.runId, experimentId: '1', trackingUri: server().url });

    const params = Object.fromEntries(
      Array.from({ length: 150 }, (_, i) => [`p.${i}`, i % 2 === 0 ? i : `v${i}`]),
    );
    await tracker.doLogParams({ ...params, flag: true, none: null });
    const paramBatches = server()
      .calls('runs/log-batch')
      .map((r) => (r.json as { params: unknown[] }).params.length);
    expect(paramBatches).toEqual([100, 52]);
    expect(server().runs.get(tracker.runId!)!.params.get('p.3')).toBe('v3');
    expect(server().runs.get(tracker.runId!)!.params.get('none')).toBe('null');

    await tracker.doLogScalars([
      { step: 1, time: 1_700_000_000_000, values: { 'phase1/loss': 0.5, 'phase1/kl': Number.NaN } },
      { step: 2, time: 1_700_000_001_000, values: { 'phase1/loss': 0.25 } },
    ]);
    expect(server().calls('runs/log-batch').at(-1)!.json).toEqual({
      run_id: tracker.runId,
      metrics: [
        { key: 'phase1/loss', value: 0.5, timestamp: 1_700_000_000_000, step: 1 },
        { key: 'phase1/loss', value: 0.25, timestamp: 1_700_000_001_000, step: 2 },
      ],
    });
    await tracker.doFinish('finished');
    expect(server().calls('runs/update').at(-1)!.json).toMatchObject({
      run_id: tracker.runId,
      status: 'FINISHED',
    });
    expect(server().runs.get(tracker.runId!)!.status).toBe('FINISHED');
  });

  it('continues the run a resumed run started, logging only the params it lacks', async () => {
    const first = createMlflowTracker({ trackingUri: server().url });
    const resume = await first.doStart({ runName: 'r', resume: null, continuesAt: null });
    await first.doLogParams({ a: 1, b: 'x' });
    const second = createMlflowTracker({ trackingUri: server().url });
    expect(await second.doStart({ runName: 'r', resume, continuesAt: null })).toEqual(resume);
    expect(server().calls('runs/create')).toHaveLength(1);
    expect(server().calls('runs/update').at(-1)!.json).toEqual({ run_id: first.runId, status: 'RUNNING' });
    await second.doLogParams({ a: 1, b: 'x', c: 2 });
    expect(server().calls('runs/log-batch').at(-1)!.json).toEqual({
      run_id: first.runId,
      params: [{ key: 'c', value: '2' }],
    });
    // A changed value: the others are logged, the change is refused naming the parameter.
    const error = await second.doLogParams({ a: 5, d: 3 }).catch((e: unknown) => e);
    expect(InvalidArgumentError.isInstance(error) && error.message).toMatch(/a \(1 -> 5\)/);
    expect(server().runs.get(first.runId!)!.params.get('d')).toBe('3');

    // Another server, or a deleted run: a new run.
    server().runs.get(first.runId!)!.lifecycleStage = 'deleted';
    const third = createMlflowTracker({ trackingUri: server().url });
    await third.doStart({ runName: 'r', resume, continuesAt: null });
    expect(third.runId).not.toBe(first.runId);
  });

  it('reads MLFLOW_TRACKING_URI, MLFLOW_EXPERIMENT_NAME and MLFLOW_TRACKING_TOKEN, and says both ways when no server is set', async () => {
    const env = {
      MLFLOW_TRACKING_URI: server().url,
      MLFLOW_EXPERIMENT_NAME: 'from-env',
      MLFLOW_TRACKING_TOKEN: TOKEN,
    };
    const tracker = createMlflowTracker({}, { env });
    await tracker.doStart({ runName: 'r', resume: null, continuesAt: null });
    expect(server().experiments.has('from-env')).toBe(true);
    expect(server().calls('runs/create')[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    const basic = createMlflowTracker(
      {},
      {
        env: {
          MLFLOW_TRACKING_URI: server().url,
          MLFLOW_TRACKING_USERNAME: 'u',
          MLFLOW_TRACKING_PASSWORD: 'pw12',
        },
      },
    );
    await basic.doStart({ runName: 'r', resume: null, continuesAt: null });
    expect(server().calls('runs/create')[1]!.headers.authorization).toBe(
      `Basic ${Buffer.from('u:pw12').toString('base64')}`,
    );
    await expect(createMlflowTracker({}, { env: {} }).doCheck!()).rejects.toThrow(
      /set trackingUri .* or the MLFLOW_TRACKING_URI environment variable/,
    );
    await expect(createMlflowTracker({ trackingUri: 'file:///tmp/mlruns' }).doCheck!()).rejects.toThrow(
      /mlflow server/,
    );
  });

  it('types failures (status, Retry-After, retryable) and keeps the token out of every message', async () => {
    server().fault = (r) =>
      r.path.endsWith('runs/create') ? { status: 401, text: `bad credentials: Bearer ${TOKEN}` } : null;
    const tracker = createMlflowTracker({ trackingUri: server().url, token: TOKEN });
    const error = await tracker
      .doStart({ runName: 'r', resume: null, continuesAt: null })
      .catch((e: unknown) => e);
    expect(ProviderCallError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ port: 'tracker', provider: 'mlflow', status: 401, isRetryable: false });
    for (const text of [(error as Error).message, inspect(error, { depth: 5 }), JSON.stringify(error)])
      expect(text).not.toContain(TOKEN.slice(4));
    server().fault = () => ({
      status: 429,
      json: { error_code: 'RESOURCE_EXHAUSTED', message: 'slow down' },
      headers: { 'retry-after': '2' },
    });
    const limited = await tracker
      .doStart({ runName: 'r', resume: null, continuesAt: null })
      .catch((e: unknown) => e);
    expect(limited).toMatchObject({ status: 429, isRetryable: true, retryAfterMs: 2000 });
    expect((limited as Error).message).toMatch(/RESOURCE_EXHAUSTED: slow down/);
    // A malformed answer is retryable: every call may be sent again.
    server().fault = null;
    await tracker.doStart({ runName: 'r', resume: null, continuesAt: null });
    server().fault = () => ({ status: 200, text: '{"run": ' });
    expect(
      await tracker.doLogScalars([{ step: 1, time: 1, values: { a: 1 } }]).catch((e: unknown) => e),
    ).toMatchObject({
      isRetryable: true,
    });
    server().fault = () => 'reset';
    expect(
      await tracker.doStart({ runName: 'r', resume: null, continuesAt: null }).catch((e: unknown) => e),
    ).toMatchObject({
      isRetryable: true,
    });
  });

  it('a start whose runs/create answer was lost finds the run it made instead of making a second one', async () => {
    const tracker = createMlflowTracker({ trackingUri: server().url });
    const caller = createReliableCaller('tracker', 'mlflow', { initialRetryDelayMs: 1, maxRetryDelayMs: 2 });
    let lost = 0;
    server().fault = (r) => (r.path.endsWith('runs/create') && lost++ === 0 ? 'lost-answer' : null);
    await caller.call('start', (signal) =>
      tracker.doStart({ runName: 'r', resume: null, continuesAt: null }, { signal }),
    );
    expect(server().calls('runs/create')).toHaveLength(1);
    expect(server().calls('runs/search')).toHaveLength(1);
    expect([...server().runs.keys()]).toEqual([tracker.runId]);
    // The next start of another run makes its own.
    const other = createMlflowTracker({ trackingUri: server().url });
    await other.doStart({ runName: 'r2', resume: null, continuesAt: null });
    expect(server().runs.size).toBe(2);
  });

  it('a start cut off in an earlier process (its run made, its answer never recorded) is continued by the start id, not made again', async () => {
    // The first process: runs/create lands on the server, its answer is lost, and the process ends.
    server().fault = (r) => (r.path.endsWith('runs/create') ? 'lost-answer' : null);
    const killed = createMlflowTracker({ trackingUri: server().url });
    await expect(
      killed.doStart({ runName: 'r', resume: null, continuesAt: null, startId: 'start-1' }),
    ).rejects.toThrow();
    expect(server().runs.size).toBe(1);
    const [made] = [...server().runs.keys()];
    server().runs.get(made!)!.params.set('a', '1'); // logged by the first process before it ended
    // The next process, with the start id its run folder kept: the same run, RUNNING, its params known.
    server().fault = null;
    const next = createMlflowTracker({ trackingUri: server().url });
    const resume = await next.doStart({ runName: 'r', resume: null, continuesAt: null, startId: 'start-1' });
    expect(resume).toMatchObject({ runId: made });
    expect(server().calls('runs/create')).toHaveLength(1);
    expect(server().runs.get(made!)!.status).toBe('RUNNING');
    await next.doLogParams({ a: 1, b: 2 });
    expect(Object.fromEntries(server().runs.get(made!)!.params)).toEqual({ a: '1', b: '2' });
    // Another start id makes its own run.
    const other = createMlflowTracker({ trackingUri: server().url });
    await other.doStart({ runName: 'r', resume: null, continuesAt: null, startId: 'start-2' });
    expect(server().runs.size).toBe(2);
  });

  it('through the call rule: a 503 and a reset are retried, a metric batch sent twice is stored once', async () => {
    const tracker = createMlflowTracker({ trackingUri: server().url });
    const caller = createReliableCaller('tracker', 'mlflow', { initialRetryDelayMs: 1, maxRetryDelayMs: 2 });
    await caller.call('start', (signal) =>
      tracker.doStart({ runName: 'r', resume: null, continuesAt: null }, { signal }),
    );
    let faults = 0;
    server().fault = (r) =>
      r.path.endsWith('log-batch') && faults++ < 2 ? (faults === 1 ? { status: 503 } : 'reset') : null;
    const scalars = [{ step: 1, time: 1_700_000_000_000, values: { loss: 1 } }];
    await caller.call('logScalars', (signal) => tracker.doLogScalars(scalars, { signal }));
    await caller.call('logScalars', (signal) => tracker.doLogScalars(scalars, { signal }));
    expect(server().calls('runs/log-batch')).toHaveLength(4);
    expect(server().runs.get(tracker.runId!)!.metrics).toEqual([
      { key: 'loss', value: 1, step: 1, timestamp: 1_700_000_000_000 },
    ]);
  });
});
