// serve-env under load: 64 concurrent OpenEnv sessions on loopback for a bounded time, each running
// whole episodes on the offline slide environment (BM25 over SQLite, sharp crops, the slide reader,
// the rule judge): a search for the question, a crop, search_complete, the reward at done.
// Then a 65th connection must get CAPACITY_REACHED. Prints one JSON line per figure.
//   npm run bench:serve   (BENCH_SERVE_SECONDS=10, BENCH_SERVE_SESSIONS=64)
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEnvServer } from '../src/server/env-server';
import { buildServedEnvironment } from '../src/server/served-environment';
import { openSession, type TestSession } from '../test/support/ws-test-client';

const SECONDS = Number(process.env.BENCH_SERVE_SECONDS ?? 10);
const SESSIONS = Number(process.env.BENCH_SERVE_SESSIONS ?? 64);
const figure = (name: string, value: unknown, extra: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ bench: 'serve', figure: name, value, ...extra })}\n`);

const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-bench-serve-'));
const { served, close } = await buildServedEnvironment({ slides: { cacheDir: dir, seed: 3, decks: 24 } });
const server = createEnvServer(served, { maxSessions: SESSIONS, idleTimeoutMs: 60_000 });
const port = await server.listen(0);
const url = `ws://127.0.0.1:${port}/ws`;

const stepMs: number[] = [];
let started = 0;
let finished = 0;
let rewarded = 0;
let missing = 0;
let errors = 0;
const deadline = Date.now() + SECONDS * 1000;

async function timed(session: TestSession, frame: unknown) {
  const t0 = performance.now();
  const reply = await session.request(frame);
  stepMs.push(performance.now() - t0);
  if (reply.type === 'error') throw new Error(String(reply.data.message));
  return reply.data as {
    observation: { text: string; metadata: Record<string, unknown> };
    reward: number | null;
    done: boolean;
  };
}

async function worker(id: number) {
  const session = await openSession(url);
  for (let n = 0; Date.now() < deadline; n++) {
    const task = served.tasks[(id * 7919 + n) % served.tasks.length]!;
    started++;
    try {
      await session.request({ type: 'reset', data: { seed: n, episode_id: `b${id}-${n}`, task: task.uid } });
      const page = await timed(session, {
        type: 'step',
        data: { text: `<think>search</think>\n<search>${task.question}</search>` },
      });
      let last = page;
      if (!page.done)
        last = await timed(session, {
          type: 'step',
          data: { text: '<think>zoom</think>\n<bbox>[0, 0, 320, 180]</bbox>' },
        });
      if (!last.done)
        last = await timed(session, {
          type: 'step',
          data: { text: '<think>done</think>\n<search_complete>true</search_complete>' },
        });
      if (!last.done) throw new Error('episode not done after search_complete');
      finished++;
      if (last.observation.metadata.reward_status === 'ok') rewarded++;
      else missing++;
    } catch (error) {
      errors++;
      process.stderr.write(`session ${id}: ${(error as Error).message}\n`);
    }
  }
  return session;
}

const t0 = performance.now();
const sessions = await Promise.all(Array.from({ length: SESSIONS }, (_, i) => worker(i)));
const elapsedS = (performance.now() - t0) / 1000;
const extra = await openSession(url);
const refusal = await extra.next();
for (const s of [...sessions, extra]) s.close();
await server.close();
await close();
await rm(dir, { recursive: true, force: true });

stepMs.sort((a, b) => a - b);
const pct = (p: number) =>
  Number(stepMs[Math.min(stepMs.length - 1, Math.floor((p / 100) * stepMs.length))]!.toFixed(2));
figure('sessions', SESSIONS, { seconds: SECONDS });
figure('episodes_per_s', Number((finished / elapsedS).toFixed(1)), {
  episodes: finished,
  elapsed_s: Number(elapsedS.toFixed(2)),
});
figure('step_latency_p50_ms', pct(50), { steps: stepMs.length });
figure('step_latency_p99_ms', pct(99));
figure('lost_episodes', started - finished, { started, finished, errors });
figure('rewards_missing', missing, { rewarded });
figure('beyond_cap', refusal.type === 'error' ? refusal.data.code : refusal.type, {
  max_sessions: refusal.data.max_sessions,
});
