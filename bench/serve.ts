// serve-env under load, each side in its own process: `searcher-rl serve-env` (the CLI, with
// `--workers N`) on loopback, and BENCH_SERVE_CLIENTS client processes (bench/serve-client.ts) holding
// 64 concurrent OpenEnv sessions between them for a bounded time, each running whole episodes on
// the offline slide environment (BM25 over SQLite, sharp crops, the slide reader, the rule judge): a
// search for the question, a crop of the page, search_complete, the reward at done. Then a 65th
// connection must get CAPACITY_REACHED, and SIGTERM must drain the server. One run per worker count
// (BENCH_SERVE_WORKERS=1,2), one after the other. Prints one JSON line per figure, each with the
// worker count and the machine's load average (1 min) at the start and end of its run.
//   npm run bench:serve   (BENCH_SERVE_SECONDS=10, BENCH_SERVE_SESSIONS=64, BENCH_SERVE_WORKERS=1,2,
//                          BENCH_SERVE_CLIENTS=1; BENCH_SERVE_NODE_ARGS='--cpu-prof' profiles the server)
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSlideEnvironment } from '../src/env/slides/build';
import { openSession } from '../test/support/ws-test-client';

const SECONDS = Number(process.env.BENCH_SERVE_SECONDS ?? 10);
const SESSIONS = Number(process.env.BENCH_SERVE_SESSIONS ?? 64);
const WORKERS = (process.env.BENCH_SERVE_WORKERS ?? '1,2').split(',').map(Number);
const CLIENTS = Number(process.env.BENCH_SERVE_CLIENTS ?? 1);
const NODE_ARGS = (process.env.BENCH_SERVE_NODE_ARGS ?? '').split(' ').filter(Boolean);
const CORPUS = { seed: 3, decks: 24 };
const root = fileURLToPath(new URL('..', import.meta.url));
const load1 = () => Number(loadavg()[0]!.toFixed(2));
const figure = (name: string, value: unknown, extra: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ bench: 'serve', figure: name, value, ...extra })}\n`);

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

const TICKS_PER_S = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
/** CPU time (ms) of a process and its live descendants, from /proc. */
function cpuMsOfTree(pid: number): number {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const text = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
      stats.set(Number(name), { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // gone meanwhile
    }
  }
  const tree = new Set([pid]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [id, s] of stats)
      if (!tree.has(id) && tree.has(s.ppid)) {
        tree.add(id);
        grew = true;
      }
  }
  let ticks = 0;
  for (const id of tree) ticks += stats.get(id)?.ticks ?? 0;
  return (ticks / TICKS_PER_S) * 1000;
}

const collect = (child: ChildProcess, stream: 'stdout' | 'stderr') => {
  const out = { text: '' };
  child[stream]!.on('data', (chunk) => {
    out.text += chunk;
  });
  return out;
};

async function startServer(config: string, workers: number) {
  const port = await freePort();
  const server = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      ...NODE_ARGS,
      'src/cli/main.ts',
      'serve-env',
      '--config',
      config,
      '--port',
      String(port),
      '--workers',
      String(workers),
      '--max-sessions',
      String(SESSIONS),
      // One client (this bench) uses the whole server.
      '--max-sessions-per-client',
      String(SESSIONS),
      '--idle-timeout-ms',
      '120000',
    ],
    { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const stderr = collect(server, 'stderr');
  const exited = new Promise<number | null>((resolve) => server.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 120_000;
  while (!/serve-env: ws:\/\//.test(stderr.text)) {
    if (server.exitCode !== null || Date.now() > deadline)
      throw new Error(`serve-env did not start:\n${stderr.text}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { server, port, stderr, exited };
}

async function runClients(url: string) {
  const startAt = Date.now() + 3000 + 500 * CLIENTS;
  const clients = Array.from({ length: CLIENTS }, (_, i) => {
    const sessions = Math.floor(SESSIONS / CLIENTS) + (i < SESSIONS % CLIENTS ? 1 : 0);
    const offset = i * Math.floor(SESSIONS / CLIENTS) + Math.min(i, SESSIONS % CLIENTS);
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/serve-client.ts'], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'inherit'],
      env: {
        ...process.env,
        BENCH_SERVE_CLIENT: JSON.stringify({ url, sessions, startAt, seconds: SECONDS, offset }),
      },
    });
    const stdout = collect(child, 'stdout');
    return { child, stdout };
  });
  const results = await Promise.all(
    clients.map(async ({ child, stdout }) => {
      while (!stdout.text.includes('\n')) {
        if (child.exitCode !== null) throw new Error('a bench client exited early');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return JSON.parse(stdout.text) as {
        started: number;
        finished: number;
        rewarded: number;
        missing: number;
        errors: number;
        firstError: string[];
        elapsedS: number;
        cpuMs: number;
        imagesReceived: number;
        imageChars: number;
        stepMs: number[];
      };
    }),
  );
  return { results, release: () => clients.forEach(({ child }) => child.stdin!.end()) };
}

async function benchWorkers(config: string, workers: number) {
  const { server, port, stderr, exited } = await startServer(config, workers);
  const url = `ws://127.0.0.1:${port}/ws`;
  const loadStart = load1();
  const serverCpu0 = cpuMsOfTree(server.pid!);
  const { results, release } = await runClients(url);
  const serverCpuMs = cpuMsOfTree(server.pid!) - serverCpu0;
  const loadEnd = load1();
  // Every client session is still open: one more connection is beyond the cap.
  const extra = await openSession(url);
  const refusal = await extra.next();
  extra.close();
  release();
  server.kill('SIGTERM');
  const exitCode = await exited;

  const sum = (key: 'started' | 'finished' | 'rewarded' | 'missing' | 'errors' | 'imagesReceived') =>
    results.reduce((n, r) => n + r[key], 0);
  const elapsedS = Math.max(...results.map((r) => r.elapsedS));
  const stepMs = results.flatMap((r) => r.stepMs).sort((a, b) => a - b);
  const pct = (p: number) => stepMs[Math.min(stepMs.length - 1, Math.floor((p / 100) * stepMs.length))]!;
  const finished = sum('finished');
  const at = { workers, load_start: loadStart, load_end: loadEnd };
  figure('episodes_per_s', Number((finished / elapsedS).toFixed(1)), {
    ...at,
    episodes: finished,
    elapsed_s: Number(elapsedS.toFixed(2)),
    sessions: SESSIONS,
    client_processes: CLIENTS,
  });
  figure('steps_per_s', Number((stepMs.length / elapsedS).toFixed(1)), { ...at, steps: stepMs.length });
  figure('step_latency_p50_ms', pct(50), at);
  figure('step_latency_p99_ms', pct(99), at);
  figure('lost_episodes', sum('started') - finished, {
    ...at,
    started: sum('started'),
    finished,
    errors: sum('errors'),
    ...(sum('errors') > 0 && { first_errors: results.flatMap((r) => r.firstError).slice(0, 5) }),
  });
  figure('rewards_missing', sum('missing'), { ...at, rewarded: sum('rewarded') });
  figure('server_cpu_ms_per_episode', Number((serverCpuMs / finished).toFixed(2)), {
    ...at,
    server_cpu_s: Number((serverCpuMs / 1000).toFixed(1)),
  });
  const clientCpuMs = results.reduce((n, r) => n + r.cpuMs, 0);
  figure('client_cpu_ms_per_episode', Number((clientCpuMs / finished).toFixed(2)), at);
  // What the CPU this run spent per episode (server and client) allows on this machine's cores
  // with nothing else on them: the figure other jobs on a shared machine do not move much.
  figure(
    'episodes_per_s_cpu_bound',
    Number(((cpus().length * 1000 * finished) / (serverCpuMs + clientCpuMs)).toFixed(1)),
    { ...at, cores: cpus().length },
  );
  figure(
    'image_kb_per_episode',
    Number((results.reduce((n, r) => n + r.imageChars, 0) / 1024 / finished).toFixed(1)),
    { ...at, images: sum('imagesReceived') },
  );
  figure('beyond_cap', refusal.type === 'error' ? refusal.data.code : refusal.type, {
    ...at,
    max_sessions: refusal.data.max_sessions,
  });
  figure('drained_exit_code', exitCode, at);
  if (exitCode !== 0) process.stderr.write(stderr.text);
}

const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-bench-serve-'));
try {
  // Rendered once, here: the servers only open the cached corpus.
  await buildSlideEnvironment(dir, CORPUS);
  const config = join(dir, 'serve.json');
  await writeFile(config, JSON.stringify({ corpus: { ...CORPUS, cacheDir: dir } }));
  figure('machine', `${cpus().length} cores`, { node: process.version, load_1_5_15: loadavg() });
  for (const workers of WORKERS) await benchWorkers(config, workers);
} finally {
  await rm(dir, { recursive: true, force: true });
}
