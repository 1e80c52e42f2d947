// Trackers: the run (trainRun, a tiny slide config) with TensorBoard and an MLflow server that
// fails, refuses connections or hangs; each must finish with the same figures as the run without
// trackers, warn once per tracker, and leak the MLFLOW_TRACKING_TOKEN canary nowhere.
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { FakeMlflow, type FakeMlflowFault } from '../../test/support/fake-mlflow';
import { maskedCrc32c } from '../../src/adapters/tensorboard/crc32c';
import { createRandom } from '../../src/core/random';
import { parseRunConfig } from '../../src/run/config';
import { trainRun } from '../../src/run/run';
import { TIMING_METRICS } from '../../src/run/step-metrics';
import type { TrackerState } from '../../src/run/trackers';
import { filesUnder } from './secrets';
import { TINY_SEARCHER } from '../../test/support/tiny-run';

const CANARY = 'mlflowbenchcanary00000000000000099';
const PHASES = [
  { name: 'phase1', steps: 30, weights: 'phase1' },
  { name: 'phase2', steps: 20, weights: 'default' },
] as const;

function tinyConfig(root: string, runId: string, trackers: unknown[]) {
  return parseRunConfig({
    runsDir: join(root, 'runs'),
    runId,
    corpus: { decks: 4, minSlides: 5, maxSlides: 5, smallPrintRate: 0.5, cacheDir: join(root, 'corpus') },
    policy: { layers: 1, width: 16, heads: 2, contextLength: 192, backend: 'wasm', coalesceSessions: false },
    sft: { demonstrations: 16, epochs: 3, batchSize: 4 },
    phases: PHASES,
    trainer: { batchSize: 2, saveFreq: 10 },
    searcher: TINY_SEARCHER,
    evaluation: { limit: 3 },
    trackers,
  });
}

/** What must not depend on the trackers: each phase's metrics (timing aside) and rollouts, the evaluations. */
async function outcome(runDir: string): Promise<string> {
  const timing = new Set<string>(TIMING_METRICS);
  const parts: unknown[] = [];
  for (const phase of PHASES) {
    for (const kind of ['metric', 'trajectory'] as const) {
      const lines = (await readFile(join(runDir, phase.name, `${kind}.jsonl`), 'utf8')).trim().split('\n');
      parts.push(
        lines.map((line) => {
          const data = JSON.parse(line).data as Record<string, unknown>;
          return Object.fromEntries(Object.entries(data).filter(([key]) => !timing.has(key)));
        }),
      );
    }
  }
  for (const name of ['eval-before-rl.json', 'eval-after-rl.json'])
    parts.push(JSON.parse(await readFile(join(runDir, name), 'utf8')));
  return JSON.stringify(parts);
}

/** Steps in a TensorBoard folder whose records all pass both CRCs (the step field of scalar events). */
async function tensorBoardSteps(dir: string): Promise<{ steps: number; badRecords: number }> {
  const steps = new Set<number>();
  let badRecords = 0;
  for await (const { bytes } of filesUnder(dir)) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    for (let at = 0; at + 12 <= bytes.length; ) {
      const length = Number(view.getBigUint64(at, true));
      const data = bytes.subarray(at + 12, at + 12 + length);
      const ok =
        view.getUint32(at + 8, true) === maskedCrc32c(bytes.subarray(at, at + 8)) &&
        view.getUint32(at + 12 + length, true) === maskedCrc32c(data);
      if (!ok) badRecords++;
      // Event.step (field 2, varint) right after wall_time (field 1, 9 bytes); a summary (field 5) follows.
      if (ok && data[9] === 0x10 && data.includes(0x2a)) {
        let step = 0;
        let shift = 0;
        for (let k = 10; ; k++) {
          step += (data[k]! & 0x7f) * 2 ** shift;
          shift += 7;
          if (data[k]! < 0x80) break;
        }
        steps.add(step);
      }
      at += 16 + length;
    }
  }
  return { steps: steps.size, badRecords };
}

/** A port nothing listens on (taken, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function trackersReliability(
  root: string,
  faultRate = 0.2,
  seed = 5,
): Promise<Record<string, unknown>> {
  const previousToken = process.env.MLFLOW_TRACKING_TOKEN;
  process.env.MLFLOW_TRACKING_TOKEN = CANARY;
  const run = async (runId: string, trackers: unknown[]) => {
    const lines: string[] = [];
    const started = performance.now();
    let error: unknown = null;
    try {
      await trainRun(tinyConfig(root, runId, trackers), { onLog: (line) => lines.push(line) });
    } catch (e) {
      error = e;
    }
    const runDir = join(root, 'runs', runId);
    let leaks = lines.filter((l) => l.includes(CANARY)).length;
    if (error)
      leaks += [inspect(error, { depth: 8 }), String(error)].filter((t) => t.includes(CANARY)).length;
    for await (const { bytes } of filesUnder(runDir)) if (bytes.includes(CANARY)) leaks++;
    const states = JSON.parse(
      await readFile(join(runDir, 'trackers.json'), 'utf8').catch(() => '{}'),
    ) as Record<string, TrackerState>;
    return {
      runDir,
      finished: error === null,
      seconds: (performance.now() - started) / 1000,
      warnings: lines.filter((l) => l.startsWith('tracker ')),
      leaks,
      states,
    };
  };
  const mlflow = await FakeMlflow.start();
  try {
    const baseline = await run('baseline', ['jsonl']);
    const expected = await outcome(baseline.runDir);
    const totalSteps = PHASES.reduce((n, p) => n + p.steps, 0);

    // Faults drawn per request (seeded, in arrival order): 429 + Retry-After, 500, a hang (past the
    // tracker's 500 ms timeout), a reset connection, a malformed body.
    const random = createRandom(seed, 0x7acc);
    const kinds = ['rate-limited', 'server-error', 'hang', 'reset', 'malformed'] as const;
    const injected: Record<string, number> = Object.fromEntries(kinds.map((k) => [k, 0]));
    mlflow.fault = (): FakeMlflowFault | null => {
      if (random.nextFloat() >= faultRate) return null;
      const kind = kinds[random.nextInt(kinds.length)]!;
      injected[kind]!++;
      if (kind === 'rate-limited') return { status: 429, headers: { 'retry-after': '0.05' } };
      if (kind === 'server-error') return { status: 500 };
      if (kind === 'malformed') return { status: 200, text: '{"run": ' };
      return kind;
    };
    const faulty = await run('faults', [
      'tensorboard',
      { type: 'mlflow', trackingUri: mlflow.url, experiment: 'bench', timeoutMs: 500 },
    ]);
    const mlflowRun = [...mlflow.runs.values()].find((r) => r.name === 'faults');
    const stepsInMlflow = new Set(
      mlflowRun?.metrics.filter((m) => m.key.startsWith('phase')).map((m) => m.step),
    );
    const requests = mlflow.requests.length;

    // A server that refuses connections, then one that never answers (the default call policy).
    mlflow.fault = () => 'reset';
    const refused = await run('refused', [
      'tensorboard',
      { type: 'mlflow', trackingUri: `http://127.0.0.1:${await closedPort()}` },
    ]);
    mlflow.fault = () => 'hang';
    const hanging = await run('hanging', ['tensorboard', { type: 'mlflow', trackingUri: mlflow.url }]);

    const scenarios = { faults: faulty, refused, hanging };
    const same = Object.fromEntries(
      await Promise.all(
        Object.entries(scenarios).map(async ([name, s]) => [
          name,
          s.finished && (await outcome(s.runDir)) === expected,
        ]),
      ),
    );
    return {
      figure: 'trackers',
      runs: 4,
      finished: [baseline, faulty, refused, hanging].filter((s) => s.finished).length,
      sameFiguresAsWithoutTrackers: same,
      faults: {
        rate: faultRate,
        mlflowRequests: requests,
        injected,
        stepsInMlflow: `${stepsInMlflow.size} of ${totalSteps}`,
        mlflow: faulty.states.mlflow,
        tensorboard: { ...(await tensorBoardSteps(join(faulty.runDir, 'tensorboard'))), of: totalSteps },
      },
      refused: {
        mlflow: refused.states.mlflow,
        tensorboardSteps: (await tensorBoardSteps(join(refused.runDir, 'tensorboard'))).steps,
      },
      hanging: {
        mlflow: hanging.states.mlflow,
        tensorboardSteps: (await tensorBoardSteps(join(hanging.runDir, 'tensorboard'))).steps,
        secondsBaseline: Number(baseline.seconds.toFixed(1)),
        secondsHanging: Number(hanging.seconds.toFixed(1)),
      },
      warningsPerRun: Object.fromEntries(
        Object.entries(scenarios).map(([name, s]) => [name, s.warnings.length]),
      ),
      firstWarnings: Object.fromEntries(
        Object.entries(scenarios).map(([name, s]) => [name, s.warnings[0] ?? null]),
      ),
      canaryLeaks: [baseline, faulty, refused, hanging].reduce((n, s) => n + s.leaks, 0),
      canaryReachedServer: mlflow.requests.some((r) => r.headers.authorization === `Bearer ${CANARY}`),
    };
  } finally {
    await mlflow.close();
    if (previousToken === undefined) delete process.env.MLFLOW_TRACKING_TOKEN;
    else process.env.MLFLOW_TRACKING_TOKEN = previousToken;
  }
}
