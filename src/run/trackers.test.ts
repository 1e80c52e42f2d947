import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeMlflow } from '../../test/support/fake-mlflow';
import { parseRunConfig } from './config';
import type { EvalSummary } from './evaluate';
import { runStore, writeJsonAtomic } from './folder';
import type { StepMetrics } from './step-metrics';
import {
  continuesAt,
  describeTrackers,
  flattenParams,
  openRunTrackers,
  TRACKERS_FILE,
  type TrackerState,
} from './trackers';

const TOKEN = 'trackercanary0000000000000000001';
let server: FakeMlflow;
let runDir: string;
beforeEach(async () => {
  server = await FakeMlflow.start();
  runDir = await mkdtemp(join(tmpdir(), 'trackers-'));
});
afterEach(async () => {
  await server.close();
  await rm(runDir, { recursive: true, force: true });
});

const metrics = (step: number): StepMetrics => ({
  step,
  epoch: 0,
  prompts: 2,
  episodes: 4,
  rewardMean: step / 10,
  rewardStd: null,
  missingRewards: 0,
  successRate: 0.5,
  goldenHitRate: 0.25,
  ndcgMean: 0.3,
  turnsMean: 2,
  invalidActionRate: 0,
  completionRate: 1,
  loss: -0.1 * step,
  clipFraction: 0.05,
  kl: 0.001,
  entropy: 1.5,
  gradNorm: 0.7,
  gradNormMax: 0.9,
  updatesApplied: 1,
  updatesNoSignal: 0,
  updatesCorrected: 0,
  updatesSkipped: 0,
  skippedReasons: [],
  rolloutTokens: 100,
  trainTokens: 80,
  rolloutTokensPerSecond: 1000,
  trainTokensPerSecond: 500,
  rolloutMs: 100,
  updateMs: 160,
});
const summary: EvalSummary = {
  split: 'test',
  questions: 6,
  judgeSuccess: 0.5,
  ndcg: 0.4,
  completion: 1,
  smallPrintSuccess: null,
  cropRate: 0.2,
  smallPrintCropRate: null,
};
/** Tags of one step: every numeric field but the phase's own step number. */
const STEP_TAGS = Object.entries(metrics(1))
  .filter(([k, v]) => k !== 'step' && typeof v === 'number')
  .map(([k]) => k);

const runConfig = (trackers: unknown[]) =>
  parseRunConfig({
    runId: 'r',
    trackers,
    phases: [
      { name: 'phase1', steps: 2, weights: 'phase1' },
      { name: 'phase2', steps: 2, weights: 'default' },
    ],
    searcher: { adapters: { judge: { type: 'openai', model: 'gpt-x', apiKey: 'sk-secret-in-config-0001' } } },
  });

describe('openRunTrackers', () => {
  // The run's trackers as the trainer opens them: run 'r' in this test's folder, with its store.
  const openTrackers = (
    config: Parameters<typeof openRunTrackers>[0]['config'],
    options: Partial<Parameters<typeof openRunTrackers>[0]> = {},
  ) => openRunTrackers({ config, runId: 'r', runDir, store: runStore(runDir), ...options });

  it('sends every step, the evaluations and the config to TensorBoard and MLflow; a resumed run continues both', async () => {
    const config = runConfig([
      'jsonl',
      'tensorboard',
      { type: 'mlflow', trackingUri: server.url, experiment: 'x' },
    ]);
    const open = () => openTrackers(config, { env: { MLFLOW_TRACKING_TOKEN: TOKEN } });
    const trackers = await open();
    trackers.logConfig(config);
    trackers.logEvaluation('eval-before-rl', 0, summary);
    for (const step of [1, 2]) trackers.logStep('phase1', step, metrics(step));
    const states = await trackers.finish('killed');
    expect(Object.keys(states)).toEqual(['tensorboard', 'mlflow']);
    const [run] = [...server.runs.values()];
    expect(run!.status).toBe('KILLED');
    expect(server.calls('runs/create')[0]!.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(run!.params.get('phases.1.name')).toBe('phase2');
    expect(run!.params.get('trackers.2.trackingUri')).toBe(server.url);
    expect(run!.params.get('searcher.adapters.judge.apiKey')).toBe('[redacted]');
    expect(JSON.stringify(server.requests.map((r) => r.json))).not.toContain('sk-secret-in-config');
    const keys = (step: number) =>
      run!.metrics
        .filter((m) => m.step === step)
        .map((m) => m.key)
        .sort();
    expect(keys(0)).toEqual(
      ['questions', 'judgeSuccess', 'ndcg', 'completion', 'cropRate']
        .map((k) => `eval-before-rl/${k}`)
        .sort(),
    );
    expect(keys(2)).toEqual(STEP_TAGS.map((k) => `phase1/${k}`).sort());
    expect(run!.metrics.find((m) => m.key === 'phase1/loss' && m.step === 2)!.value).toBeCloseTo(-0.2);
    expect(states.mlflow).toMatchObject({ failures: 0, dropped: 0, steps: 2 });
    expect(states.tensorboard!.resume).toEqual({ logDir: join(runDir, 'tensorboard') });

    // The same run folder again: the same MLflow run, a second TensorBoard file.
    const again = await open();
    again.logStep('phase2', 3, metrics(1));
    const after = await again.finish('finished');
    expect(server.calls('runs/create')).toHaveLength(1);
    expect(run!.status).toBe('FINISHED');
    expect(run!.metrics.filter((m) => m.key === 'phase2/loss').map((m) => m.step)).toEqual([3]);
    expect(await readdir(join(runDir, 'tensorboard'))).toHaveLength(2);
    expect(after.mlflow).toMatchObject({ steps: 3 });
    const saved = JSON.parse(await readFile(join(runDir, TRACKERS_FILE), 'utf8')) as Record<
      string,
      TrackerState
    >;
    expect(saved.mlflow!.resume).toEqual({ runId: run!.runId, experimentId: '1', trackingUri: server.url });
    expect(JSON.stringify(saved)).not.toContain(TOKEN);
    expect(describeTrackers(after)).toMatch(
      /^trackers: tensorboard 3 steps \(.*tensorboard\); mlflow 3 steps \(run run1/,
    );
  });

  it('a failing tracker never stops the run: counted, warned once, left off after three failures in a row', async () => {
    server.fault = (r) => (r.path.endsWith('log-batch') ? { status: 500, text: `boom ${TOKEN}` } : null);
    const config = runConfig(['tensorboard', { type: 'mlflow', trackingUri: server.url, maxRetries: 0 }]);
    const lines: string[] = [];
    const trackers = await openTrackers(config, {
      onLog: (line) => lines.push(line),
      env: { MLFLOW_TRACKING_TOKEN: TOKEN },
    });
    trackers.logConfig(config);
    for (let step = 1; step <= 10; step++) trackers.logStep('phase1', step, metrics(step));
    const states = await trackers.finish('finished');
    expect(states.mlflow).toMatchObject({ failures: 3, dropped: 8, steps: 0 });
    expect(states.mlflow!.firstError).toMatch(/status 500/);
    expect(states.tensorboard).toMatchObject({ failures: 0, steps: 10 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^tracker mlflow: .*status 500.*the run goes on/);
    expect(lines.join('') + JSON.stringify(states)).not.toContain(TOKEN.slice(4));
    // The MLflow run is still ended (its status says how the run ended).
    expect([...server.runs.values()][0]!.status).toBe('FINISHED');
    expect(describeTrackers(states)).toMatch(/mlflow 0 steps .*, 3 calls failed, 8 not made$/);
  });

  it('a hanging server costs the run nothing: its calls time out in the background', async () => {
    server.fault = (r) => (r.path.endsWith('runs/create') ? 'hang' : null);
    const config = runConfig([{ type: 'mlflow', trackingUri: server.url, timeoutMs: 50, maxRetries: 1 }]);
    const lines: string[] = [];
    const trackers = await openTrackers(config, { onLog: (l) => lines.push(l) });
    trackers.logStep('phase1', 1, metrics(1));
    const states = await trackers.finish('finished');
    // The start, then the start again before the step: both time out; the step is not sent.
    expect(states.mlflow).toMatchObject({ resume: null, failures: 2, dropped: 1 });
    expect(lines).toEqual([expect.stringMatching(/^tracker mlflow: .*timed out after 50 ms/)]);
    expect(describeTrackers(states)).toMatch(/mlflow 0 steps \(not started\)/);
  });

  it('a server down at the start is tried again with the next calls, and gets the steps from when it answers', async () => {
    let refused = 0;
    server.fault = (r) => (r.path.endsWith('get-by-name') && refused++ < 2 ? 'reset' : null);
    const config = runConfig([{ type: 'mlflow', trackingUri: server.url, maxRetries: 0 }]);
    const lines: string[] = [];
    const trackers = await openTrackers(config, { onLog: (l) => lines.push(l) });
    for (let step = 1; step <= 3; step++) trackers.logStep('phase1', step, metrics(step));
    const states = await trackers.finish('finished');
    // The start fails, step 1's start fails (two in a row), step 2's start succeeds: steps 2 and 3 go.
    expect(states.mlflow).toMatchObject({ failures: 2, dropped: 1, steps: 2 });
    const [run] = [...server.runs.values()];
    expect([...new Set(run!.metrics.map((m) => m.step))]).toEqual([2, 3]);
    expect(run!.status).toBe('FINISHED');
    expect(lines).toHaveLength(1);
  });

  it("the run's end waits for a hanging tracker only its grace period, then gives its calls up", async () => {
    server.fault = (r) => (r.path.endsWith('log-batch') ? 'hang' : null);
    const config = runConfig([
      'tensorboard',
      { type: 'mlflow', trackingUri: server.url, timeoutMs: 600_000 },
    ]);
    const trackers = await openTrackers(config, { finishGraceMs: 1000 });
    for (let step = 1; step <= 3; step++) trackers.logStep('phase1', step, metrics(step));
    const states = await trackers.finish('finished');
    // One call hangs until the grace ends (the first step's, or the start's on a slow machine); the rest are given up.
    expect(states.mlflow).toMatchObject({ failures: 1, steps: 0 });
    expect(states.mlflow!.dropped).toBeGreaterThanOrEqual(2);
    expect(states.mlflow!.firstError).toMatch(/aborted/);
    expect(states.tensorboard).toMatchObject({ failures: 0, steps: 3 });
    expect(server.calls('runs/update')).toHaveLength(0);
  });

  it('a run killed while its tracker started (the server made the run, the folder never heard) is continued by the next attempt, not made twice', async () => {
    const config = runConfig([{ type: 'mlflow', trackingUri: server.url, maxRetries: 0 }]);
    // The first attempt: runs/create lands, its answer is lost, and the process dies (no finish).
    server.fault = (r) => (r.path.endsWith('runs/create') ? 'lost-answer' : null);
    await openTrackers(config);
    await expect.poll(() => server.runs.size).toBe(1);
    const kept = JSON.parse(await readFile(join(runDir, TRACKERS_FILE), 'utf8')) as Record<
      string,
      TrackerState
    >;
    expect(kept.mlflow).toMatchObject({ resume: null, startId: expect.any(String) });
    // The next attempt (the same command again) finds that run by the start id the folder kept.
    server.fault = null;
    const next = await openTrackers(config);
    next.logStep('phase1', 1, metrics(1));
    const states = await next.finish('finished');
    expect(server.runs.size).toBe(1);
    expect(server.calls('runs/create')).toHaveLength(1);
    const [id, run] = [...server.runs.entries()][0]!;
    expect(states.mlflow).toMatchObject({ resume: { runId: id }, startId: null, steps: 1 });
    expect(run.status).toBe('FINISHED');
    expect([...new Set(run.metrics.map((m) => m.step))]).toEqual([1]);
  });

  it('a tracker without a server set is warned once and the others go on', async () => {
    const config = runConfig(['mlflow', 'tensorboard']);
    const lines: string[] = [];
    const trackers = await openTrackers(config, { onLog: (l) => lines.push(l), env: {} });
    trackers.logStep('phase1', 1, metrics(1));
    const states = await trackers.finish('finished');
    expect(lines).toEqual([expect.stringMatching(/MLFLOW_TRACKING_URI/)]);
    expect(states.tensorboard!.steps).toBe(1);
  });

  it('a tracker new to a run folder first gets the evaluation and the steps not run again (on the run axis)', async () => {
    const store = runStore(runDir);
    const checkpoint = (runId: string, step: number) => ({
      kind: 'checkpoint' as const,
      runId,
      step,
      time: 0,
      data: {},
    });
    await store.doAppend([
      { kind: 'metric', runId: 'phase1', step: 1, time: 1, data: metrics(1) },
      { kind: 'metric', runId: 'phase1', step: 2, time: 2, data: metrics(2) },
      checkpoint('phase1', 2),
      checkpoint('phase2', 0),
      // Run again by this attempt (after phase 2's last checkpoint): not sent twice.
      { kind: 'metric', runId: 'phase2', step: 1, time: 3, data: metrics(1) },
    ]);
    await writeJsonAtomic(join(runDir, 'eval-before-rl.json'), summary);
    const config = runConfig([{ type: 'mlflow', trackingUri: server.url }]);
    expect(await continuesAt(config, store)).toBe(3);
    const trackers = await openRunTrackers({ config, runId: 'r', runDir, store });
    const states = await trackers.finish('finished');
    const [run] = [...server.runs.values()];
    expect([...new Set(run!.metrics.map((m) => `${m.key.split('/')[0]}@${m.step}`))]).toEqual([
      'eval-before-rl@0',
      'phase1@1',
      'phase1@2',
    ]);
    expect(states.mlflow!.steps).toBe(2);
  });
});

describe('flattenParams', () => {
  it('flattens to dotted keys and redacts credentials', () => {
    expect(
      flattenParams({
        a: { b: 1, c: [true, 'x'] },
        apiKey: 'k',
        headers: { authorization: 'Bearer t' },
        n: null,
        episode: { maxTurnTokens: 64, maxContextTokens: 512 },
        judge: { token: 't', secretName: 'x' },
      }),
    ).toEqual({
      'a.b': 1,
      'a.c.0': true,
      'a.c.1': 'x',
      apiKey: '[redacted]',
      headers: '[redacted]',
      n: null,
      // Settings whose names merely contain a credential's word are sent as they are.
      'episode.maxTurnTokens': 64,
      'episode.maxContextTokens': 512,
      'judge.token': '[redacted]',
      'judge.secretName': 'x',
    });
  });
});
