import { availableParallelism } from 'node:os';
import { buildSlideEnvironment } from '../env/slides/build';
import { ConfigValidationError } from '../core/errors';
import { loadRunConfig, parseRunConfig } from '../run/config';
import { readConfigFile } from '../run/config-file';
import { cluster, createClusterSlots, runSlotPrimary } from './cluster';
import { createEnvServer } from './env-server';
import { buildServedEnvironment, type ServedEnvironmentSettings } from './served-environment';

export interface ServeEnvOptions {
  config?: string;
  tasks?: string;
  split: 'train' | 'validation' | 'test';
  host: string;
  port: number;
  workers: number;
  maxSessions: number;
  idleTimeoutMs: number | null;
  token: string | null;
  drainMs: number;
  version: string;
}

/** The sections of a configuration file that serve-env uses. */
const SERVED_SECTIONS = ['corpus', 'searcher'];

async function settingsOf(options: ServeEnvOptions): Promise<ServedEnvironmentSettings> {
  // Without a `searcher` section, the Searcher's own defaults (full instructions, 7 turns), not the
  // tiny in-process policy's run defaults: a served environment is for a trainer's real model.
  const raw = options.config
    ? ((await readConfigFile(options.config)) as { searcher?: { adapters?: Record<string, unknown> } })
    : null;
  // The server serves the environment and its rewards; what only a training run uses would be ignored.
  const ignored = Object.keys(raw ?? {})
    .filter((key) => !SERVED_SECTIONS.includes(key))
    .map((key) => ({
      field: `${options.config}: ${key}`,
      message: `serve-env uses only ${SERVED_SECTIONS.join(' and ')}; the trainer that connects does the rest`,
    }));
  if (raw?.searcher?.adapters?.policy !== undefined)
    ignored.push({
      field: `${options.config}: searcher.adapters.policy`,
      message: "the trainer's model is the policy; serve-env has none",
    });
  if (ignored.length > 0) throw new ConfigValidationError({ issues: ignored });
  const run = options.config ? await loadRunConfig(options.config) : parseRunConfig({});
  const searcher = raw?.searcher === undefined ? {} : run.searcher;
  return {
    searcher,
    slides: { ...(run.corpus ?? parseRunConfig({}).corpus!), split: options.split },
    ...(options.tasks && { tasksFile: options.tasks }),
  };
}

/**
 * `searcher-rl serve-env`: an OpenEnv server on one port. With several workers the primary holds
 * the port and the session count, and node:cluster hands connections to the workers. SIGTERM
 * drains: no new sessions, running episodes finish (up to `drainMs`), then exit.
 */
export async function serveEnv(options: ServeEnvOptions, log: (line: string) => void): Promise<void> {
  const workers = Math.max(1, Math.min(options.workers, availableParallelism() * 4));
  const settings = await settingsOf(options);
  if (cluster.isPrimary && workers > 1) {
    // The corpus is built once, here, so the workers only open the cached one.
    if (!settings.tasksFile && settings.slides) {
      const { cacheDir, split: _split, ...corpus } = settings.slides;
      await buildSlideEnvironment(cacheDir, corpus);
    }
    const slots = runSlotPrimary(options.maxSessions);
    let listening = 0;
    for (let i = 0; i < workers; i++) {
      const worker = cluster.fork();
      slots.attach(worker);
      worker.on('listening', () => {
        if (++listening === workers)
          log(
            `serve-env: ws://${options.host}:${options.port}/ws, ${workers} workers, at most ${options.maxSessions} sessions`,
          );
      });
    }
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      log('serve-env: draining');
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    await new Promise<void>((resolve) => {
      cluster.on('exit', (worker, code) => {
        if (!stopping) log(`serve-env: worker ${worker.id} exited (${code ?? 'signal'})`);
        if (Object.keys(cluster.workers ?? {}).length === 0) resolve();
      });
    });
    return;
  }
  const { served, close } = await buildServedEnvironment(settings);
  const server = createEnvServer(served, {
    maxSessions: options.maxSessions,
    idleTimeoutMs: options.idleTimeoutMs,
    token: options.token,
    version: options.version,
    ...(cluster.isWorker && { slots: createClusterSlots() }),
  });
  const port = await server.listen(options.port, options.host);
  if (!cluster.isWorker)
    log(
      `serve-env: ws://${options.host}:${port}/ws, ${served.tasks.length} tasks, at most ${options.maxSessions} sessions`,
    );
  await new Promise<void>((resolve) => {
    const stop = () => void server.drain(options.drainMs).then(close).then(resolve);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  if (cluster.isWorker) process.exit(0);
}
