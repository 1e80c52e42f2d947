import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { timingSafeEqual } from 'node:crypto';
import { WebSocketServer, type WebSocket } from 'ws';
import type { PromptRecord } from '../core/types';
import { indexTasks, SessionEnvironment, type ServedEnvironment } from './environment';
import { clientMessageSchema, errorFrame, schemaResponse, type ServerMessage } from './protocol';
import { createLocalSlots, type SessionSlots } from './slots';

export interface EnvServerOptions {
  /** Concurrent sessions (WebSocket connections) allowed; beyond it a connection gets CAPACITY_REACHED. */
  maxSessions?: number;
  /** A session with no message for this long is ended (SESSION_ERROR, then closed). `null`: never. */
  idleTimeoutMs?: number | null;
  /** When set, every request but `/health` needs `Authorization: Bearer <token>`. */
  token?: string | null;
  /** Shared session slots (the cluster primary's); default: this process's own. */
  slots?: SessionSlots;
  version?: string;
}

export interface EnvServer {
  readonly http: Server;
  listen(port: number, host?: string): Promise<number>;
  /** Active sessions in this process. */
  readonly activeSessions: number;
  /**
   * Graceful drain: no new connections or episodes; sessions finish the episode they are in (or
   * until `deadlineMs`), then everything closes.
   */
  drain(deadlineMs?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * An OpenEnv environment server for the Searcher: `/ws` sessions (one environment each), and the
 * HTTP side: `GET /health`, `/metadata`, `/schema`, `/tasks`.
 */
export function createEnvServer(served: ServedEnvironment, options: EnvServerOptions = {}): EnvServer {
  const maxSessions = options.maxSessions ?? 64;
  const slots = options.slots ?? createLocalSlots(maxSessions);
  const idleTimeoutMs = options.idleTimeoutMs ?? null;
  const token = options.token ?? null;
  const taskIndex = indexTasks(served.tasks);
  const sockets = new Set<WebSocket>();
  const busy = new Set<WebSocket>();
  let draining = false;
  let drained: (() => void) | null = null;

  const authorised = (request: IncomingMessage) => {
    if (token === null) return true;
    const given = Buffer.from(request.headers.authorization ?? '');
    const expected = Buffer.from(`Bearer ${token}`);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };

  const http = createServer((request, response) => handleHttp(request, response));
  const wss = new WebSocketServer({ noServer: true, maxPayload: 16 * 1024 * 1024 });

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
    const path = new URL(request.url ?? '/', 'http://localhost').pathname;
    if (path !== '/ws' || draining || !authorised(request)) {
      const status =
        path !== '/ws' ? '404 Not Found' : draining ? '503 Service Unavailable' : '401 Unauthorized';
      socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
      return;
    }
    wss.handleUpgrade(request, socket, head, (ws) => void session(ws));
  });

  function send(ws: WebSocket, frame: ServerMessage) {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame));
  }

  async function session(ws: WebSocket) {
    // Frames that arrive while the slot is asked for (a round trip to the cluster primary) wait here.
    const early: string[] = [];
    let deliver: ((raw: string) => void) | null = null;
    let cleanup: (() => void) | null = null;
    let closed = false;
    ws.on('message', (raw, isBinary) => {
      const text = isBinary ? '' : raw.toString();
      if (deliver) deliver(text);
      else early.push(text);
    });
    ws.once('close', () => {
      closed = true;
      cleanup?.();
    });
    // As OpenEnv's `/ws`: the connection is accepted, then refused with a frame when full.
    const slot = await slots.acquire();
    if (!slot.ok) {
      send(
        ws,
        errorFrame('CAPACITY_REACHED', `Server at capacity: ${slot.active}/${slot.max} sessions active`, {
          active_sessions: slot.active,
          max_sessions: slot.max,
        }),
      );
      ws.close(1000);
      return;
    }
    if (closed) return slots.release();
    let environment: SessionEnvironment;
    try {
      environment = new SessionEnvironment(served, taskIndex);
    } catch (error) {
      slots.release();
      send(ws, errorFrame('FACTORY_ERROR', (error as Error).message, { factory_name: 'SessionEnvironment' }));
      ws.close(1011);
      return;
    }
    sockets.add(ws);
    const abort = new AbortController();
    let timer: NodeJS.Timeout | null = null;
    const touch = () => {
      if (idleTimeoutMs === null) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        send(ws, errorFrame('SESSION_ERROR', `session idle for more than ${idleTimeoutMs} ms; closed`));
        ws.close(1000);
      }, idleTimeoutMs);
    };
    cleanup = () => {
      if (timer) clearTimeout(timer);
      abort.abort();
      sockets.delete(ws);
      busy.delete(ws);
      slots.release();
      if (drained && sockets.size === 0) drained();
    };
    touch();
    // Messages are handled one at a time, in order, as the Python server's receive loop does.
    let queue = Promise.resolve();
    deliver = (text) => {
      queue = queue.then(() => handle(text));
    };
    early.splice(0).forEach(deliver);

    async function handle(raw: string) {
      touch();
      let message: unknown;
      try {
        message = JSON.parse(raw);
      } catch (error) {
        return send(ws, errorFrame('INVALID_JSON', `Invalid JSON: ${(error as Error).message}`));
      }
      const type = (message as { type?: unknown } | null)?.type;
      if (!['reset', 'step', 'state', 'close'].includes(type as string))
        return send(ws, errorFrame('UNKNOWN_TYPE', `Unknown message type: ${String(type ?? '')}`));
      const parsed = clientMessageSchema.safeParse(message);
      if (!parsed.success)
        return send(
          ws,
          errorFrame('VALIDATION_ERROR', 'Invalid message', {
            errors: parsed.error.issues.map((i) => ({ loc: i.path, msg: i.message, type: i.code })),
          }),
        );
      const msg = parsed.data;
      try {
        switch (msg.type) {
          case 'reset':
            if (draining) {
              send(
                ws,
                errorFrame(
                  'SESSION_ERROR',
                  'the server is draining (shutting down); reconnect to another worker',
                ),
              );
              ws.close(1001);
              return;
            }
            busy.add(ws);
            return send(ws, { type: 'observation', data: environment.reset(msg.data) });
          case 'step': {
            const reply = await environment.step(msg.data.text, msg.data.finish_reason, abort.signal);
            if (reply.done) busy.delete(ws);
            send(ws, { type: 'observation', data: reply });
            if (reply.done && draining) ws.close(1001);
            return;
          }
          case 'state':
            return send(ws, { type: 'state', data: environment.state() });
          case 'close':
            ws.close(1000);
            return;
        }
      } catch (error) {
        send(ws, errorFrame('EXECUTION_ERROR', error instanceof Error ? error.message : String(error)));
      }
    }
  }

  return {
    http,
    get activeSessions() {
      return sockets.size;
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
