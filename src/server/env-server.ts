import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { PromptRecord } from '../core/types';
import { registerSecret } from '../core/secrets';
import { basicUserName, createTokenCheck } from './auth';
import { indexTasks, type ServedEnvironment } from './environment';
import { resolveServerLimits, type ServerLimitOptions } from './limits';
import { schemaResponse } from './protocol';
import { runSession, type SessionHost } from './session';
import { createLocalSlots, defaultSessionsPerClient, type SessionSlots } from './slots';

/**
 * Options of `createEnvServer`: the session caps, the token, the idle timeout and the limits on
 * what a client may send.
 */
export interface EnvServerOptions extends ServerLimitOptions {
  /** Concurrent sessions (WebSocket connections) allowed; beyond it a connection gets CAPACITY_REACHED. */
  maxSessions?: number;
  /**
   * Concurrent sessions one client may hold (docs/scale-out.md#fair-sharing); beyond it that
   * client gets CAPACITY_REACHED while others are still served. A client is the Basic user name
   * when the token is given that way, else the connection's remote address. Default: half of
   * `maxSessions`, at least 1; `maxSessions` turns it off.
   */
  maxSessionsPerClient?: number;
  /** A session with no message for this long is ended (SESSION_ERROR, then closed). `null`: never. */
  idleTimeoutMs?: number | null;
  /**
   * When set, every request but `/health` needs the token: `Authorization: Bearer <token>`, or HTTP
   * Basic credentials with the token as password (`ws://user:<token>@host:port`, for OpenEnv's clients).
   */
  token?: string | null;
  /** Shared session slots (the cluster primary's); default: this process's own. */
  slots?: SessionSlots;
  version?: string;
  /** One line per session that ended on a refused frame or a socket error (default: none). */
  log?: (line: string) => void;
}

/** An environment server over HTTP and WebSocket (OpenEnv protocol), not yet listening. */
export interface EnvServer {
  readonly http: Server;
  /**
   * Starts listening (host `127.0.0.1` by default); resolves with the port bound (the one given, or
   * the one chosen for 0).
   */
  listen(port: number, host?: string): Promise<number>;
  /** Active sessions in this process. */
  readonly activeSessions: number;
  /** Sessions this process has stopped reading from because their replies are not being read. */
  readonly pausedSessions: number;
  /**
   * Graceful drain: no new connections or episodes; sessions finish the episode they are in (or
   * until `deadlineMs`), then everything closes.
   */
  drain(deadlineMs?: number): Promise<void>;
  /** Closes every connection at once and stops listening (`drain` first to let episodes finish). */
  close(): Promise<void>;
}

/**
 * The key a session is counted under for the per-client cap. With `--token` every client holds the
 * same token, so the token names no client: a client that gives it as a Basic password names
 * itself by the user name (`ws://trainer-a:<token>@host`), and one that does not is its remote
 * address, as every client is without a token. Never the token itself (it would sit in the counts).
 */
export function clientKeyOf(request: IncomingMessage, authOn: boolean): string {
  const user = authOn ? basicUserName(request.headers.authorization) : undefined;
  return user ? `user:${user}` : `address:${request.socket.remoteAddress ?? 'unknown'}`;
}

/**
 * An OpenEnv environment server for the Searcher: `/ws` sessions (one environment each), and the
 * HTTP side: `GET /health`, `/metadata`, `/schema`, `/tasks`.
 */
export function createEnvServer(served: ServedEnvironment, options: EnvServerOptions = {}): EnvServer {
  const maxSessions = options.maxSessions ?? 64;
  const slots =
    options.slots ??
    createLocalSlots(maxSessions, options.maxSessionsPerClient ?? defaultSessionsPerClient(maxSessions));
  const idleTimeoutMs = options.idleTimeoutMs ?? null;
  const token = options.token ?? null;
  // The token is a credential: redacted from every error, log line and stored record from here on.
  registerSecret(token);
  const taskIndex = indexTasks(served.tasks);
  const sockets = new Set<WebSocket>();
  const busy = new Set<WebSocket>();
  let draining = false;
  let drained: (() => void) | null = null;

  const limits = resolveServerLimits(served.episode, options);
  const tokenCheck = createTokenCheck(token);
  const authorised = (request: IncomingMessage) => tokenCheck(request.headers.authorization);
  let stalled = 0;

  const http = createServer((request, response) => handleHttp(request, response));
  // Frames past maxMessageBytes close their connection (1009); no compression (no inflation bombs).
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: limits.maxMessageBytes,
    perMessageDeflate: false,
  });
  wss.on('error', (error) => options.log?.(`serve-env: ${error.message}`));

  function json(response: ServerResponse, status: number, body: unknown) {
    response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  }

  function handleHttp(request: IncomingMessage, response: ServerResponse) {
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (request.method !== 'GET') return json(response, 405, { detail: 'Method Not Allowed' });
    if (url.pathname === '/health')
      return json(response, draining ? 503 : 200, { status: draining ? 'degraded' : 'healthy' });
    if (!authorised(request)) return json(response, 401, { detail: 'missing or wrong bearer token' });
    switch (url.pathname) {
      case '/metadata':
        return json(response, 200, {
          name: served.name ?? 'searcher-rl',
          description:
            served.description ??
            'Searcher episodes: search, crop, search_complete; the reward (judge, NDCG, format gate) at done.',
          readme_content: null,
          version: options.version ?? null,
          author: null,
          documentation_url: null,
        });
      case '/schema':
        return json(response, 200, schemaResponse());
      case '/tasks': {
        const offset = Math.max(0, Number(url.searchParams.get('offset') ?? 0) || 0);
        const limit = Math.min(1000, Math.max(1, Number(url.searchParams.get('limit') ?? 100) || 100));
        const page = served.tasks
          .slice(offset, offset + limit)
          .map((t: PromptRecord) => ({ id: t.uid, question: t.question }));
        return json(response, 200, { total: served.tasks.length, offset, tasks: page });
      }
      default:
        return json(response, 404, { detail: 'Not Found' });
    }
  }

  http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    // A socket reset before ws takes it over must not reach the process ('error' unhandled).
    socket.on('error', () => socket.destroy());
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path !== '/ws' || draining || !authorised(request)) {
      const status =
        path !== '/ws' ? '404 Not Found' : draining ? '503 Service Unavailable' : '401 Unauthorized';
      socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    const client = clientKeyOf(request, token !== null);
    wss.handleUpgrade(request, socket, head, (ws) => void runSession(ws, host, client));
  });

  const host: SessionHost = {
    served,
    taskIndex,
    slots,
    limits,
    idleTimeoutMs,
    draining: () => draining,
    opened: (ws) => sockets.add(ws),
    closed: (ws) => {
      sockets.delete(ws);
      busy.delete(ws);
      if (drained && sockets.size === 0) drained();
    },
    inEpisode: (ws, value) => (value ? busy.add(ws) : busy.delete(ws)),
    stalledChange: (value) => {
      stalled += value ? 1 : -1;
    },
    ...(options.log && { log: options.log }),
  };

  return {
    http,
    get activeSessions() {
      return sockets.size;
    },
    get pausedSessions() {
      return stalled;
    },
    listen(port, host = '127.0.0.1') {
      return new Promise((resolve, reject) => {
        http.once('error', reject);
        http.listen(port, host, () => resolve((http.address() as AddressInfo).port));
      });
    },
    async drain(deadlineMs = 30_000) {
      draining = true;
      // Idle sessions (between episodes) close now; those inside an episode finish it first.
      for (const ws of sockets) if (!busy.has(ws)) ws.close(1001);
      if (sockets.size > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve;
          setTimeout(resolve, deadlineMs).unref();
        });
      }
      await this.close();
    },
    async close() {
      for (const ws of sockets) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
