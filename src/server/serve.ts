import { availableParallelism } from 'node:os';
import { buildSlideEnvironment } from '../env/slides/build';
import { ConfigValidationError } from '../core/errors';
import { loadRunConfig, parseRunConfig } from '../run/config';
import { readConfigFile } from '../run/config-file';
import { cluster, createClusterSlots, runSlotPrimary } from './cluster';
import { createEnvServer } from './env-server';
import type { ServerLimitOptions } from './limits';
import { buildServedEnvironment, type ServedEnvironmentSettings } from './served-environment';
import { defaultSessionsPerClient } from './slots';

/**
 * `searcher-rl serve-env`'s options: the config and tasks, the address, workers, session caps,
 * token and timeouts.
 */
export interface ServeEnvOptions {
  config?: string;
  tasks?: string;
  split: 'train' | 'validation' | 'test';
  host: string;
  port: number;
  workers: number;
  maxSessions: number;
  /** Sessions one client may hold (docs/scale-out.md#fair-sharing); default half of `maxSessions`, at least 1. */
  maxSessionsPerClient?: number;
  idleTimeoutMs: number | null;
  token: string | null;
  drainMs: number;
  version: string;
  /** Caps on what a client may send and leave unread (default: from `searcher.episode.maxTurnTokens`). */
  limits?: ServerLimitOptions;
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
    ...(options.tasks && { tasksFile: options.tasks, tasksSplit: options.split }),
  };
}

/**
 * `searcher-rl serve-env`: an OpenEnv server on one port. With several workers the primary holds
 * the port and the session count, node:cluster hands connections to the workers, and a worker
 * that dies is replaced. SIGTERM drains: no new sessions, running episodes finish (up to
 * `drainMs`), then exit.
 */
export async function serveEnv(options: ServeEnvOptions, log: (line: string) => void): Promise<void> {
  const workers = Math.max(1, Math.min(options.workers, availableParallelism() * 4));
  const perClient = options.maxSessionsPerClient ?? defaultSessionsPerClient(options.maxSessions);
  const settings = await settingsOf(options);
  if (cluster.isPrimary && workers > 1) {
    // The corpus is built once, here, so the workers only open the cached one.
    if (!settings.tasksFile && settings.slides) {
      const { cacheDir, split: _split, ...corpus } = settings.slides;
      await buildSlideEnvironment(cacheDir, corpus);
    }
    const slots = runSlotPrimary(options.maxSessions, perClient);
    const listening = new Set<number>();
    let announced = false;
    const fork = () => {
      const worker = cluster.fork();
      slots.attach(worker);
      worker.on('listening', () => {
        listening.add(worker.id);
        if (!announced && listening.size === workers) {
          announced = true;
          log(
            `serve-env: ws://${options.host}:${options.port}/ws, ${workers} workers, at most ${options.maxSessions} sessions, ${perClient} a client`,
          );
        }
      });
    };
    for (let i = 0; i < workers; i++) fork();
    let stopping = false;
    let failure: Error | null = null;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      log('serve-env: draining');
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    await new Promise<void>((resolve) => {
      cluster.on('exit', (worker, code, signal) => {
        const served = listening.delete(worker.id);
        if (!stopping) {
          if (served) {
            // A worker that served and died (a crash, a kill) is replaced; its sessions are lost, no others.
            log(`serve-env: worker ${worker.id} exited (${code ?? signal}); starting another`);
            fork();
          } else {
            // One that never listened would fail again: stop rather than fork in a loop.
            failure = new Error(
              `serve-env: worker ${worker.id} exited (${code ?? signal}) before it listened`,
            );
            log(failure.message);
            stop();
          }
        }
        if (Object.keys(cluster.workers ?? {}).length === 0) resolve();
      });
    });
    if (failure) throw failure;
    return;
  }
  const { served, close } = await buildServedEnvironment(settings);
  const server = createEnvServer(served, {
    maxSessions: options.maxSessions,
    maxSessionsPerClient: perClient,
    idleTimeoutMs: options.idleTimeoutMs,
    token: options.token,
    version: options.version,
    ...options.limits,
    log,
    ...(cluster.isWorker && { slots: createClusterSlots() }),
  });
  const port = await server.listen(options.port, options.host);
  if (!cluster.isWorker)
    log(
      `serve-env: ws://${options.host}:${port}/ws, ${served.tasks.length} tasks, at most ${options.maxSessions} sessions, ${perClient} a client`,
    );
  await new Promise<void>((resolve) => {
    const stop = () => void server.drain(options.drainMs).then(close).then(resolve);
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  if (cluster.isWorker) process.exit(0);
}
