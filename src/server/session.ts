import type { WebSocket } from 'ws';
import type { PromptRecord } from '../core/types';
import { SessionEnvironment, type ServedEnvironment } from './environment';
import type { ServerLimits } from './limits';
import { clientMessageSchema, errorFrame, mcpNotServed, quoted } from './protocol';
import { createSessionFlow, type InboundFrame } from './session-flow';
import type { SessionSlots } from './slots';

/** What a session needs from its server. */
export interface SessionHost {
  served: ServedEnvironment;
  taskIndex: ReadonlyMap<string, PromptRecord>;
  slots: SessionSlots;
  limits: ServerLimits;
  idleTimeoutMs: number | null;
  draining(): boolean;
  /** The session holds a slot and an environment / has given them back. */
  opened(ws: WebSocket): void;
  closed(ws: WebSocket): void;
  /** Inside an episode (a drain lets it finish) or between episodes. */
  inEpisode(ws: WebSocket, value: boolean): void;
  stalledChange(stalled: boolean): void;
  log?: (line: string) => void;
}

const CLIENT_TYPES = ['reset', 'step', 'state', 'close'];

/**
 * One WebSocket connection: one environment, its frames handled in order as OpenEnv's `/ws`
 * receive loop does. Whatever the client sends costs at most this session: a frame the WebSocket
 * layer refuses (not UTF-8: 1007; over maxMessageBytes: 1009) closes this connection only, and a
 * frame that is not a message of the protocol gets an error frame and the session goes on.
 */
export async function runSession(ws: WebSocket, host: SessionHost, client: string): Promise<void> {
  const { limits, idleTimeoutMs } = host;
  let closed = false;
  let release: (() => void) | null = null;
  // Errors are those of this connection (a refused frame, a reset socket); ws closes it itself.
  ws.on('error', (error: Error & { code?: string }) =>
    host.log?.(
      `serve-env: a session ended: ${quoted(error.message, 120)}${error.code ? ` (${error.code})` : ''}`,
    ),
  );
  ws.once('close', () => {
    closed = true;
    release?.();
  });
  // Frames that arrive while the slot is asked for (a round trip to the cluster primary) wait in the flow.
  const flow = createSessionFlow(ws, limits, host.stalledChange);
  const send = flow.send;
  // As OpenEnv's `/ws`: the connection is accepted, then refused with a frame when full.
  const slot = await host.slots.acquire(client);
  if (!slot.ok) {
    // The per-client cap (docs/scale-out.md#fair-sharing) is the same refusal, so that clients
    // that handle a full server handle it too; the message and fields say which cap it was.
    const message =
      slot.refusedBy === 'client'
        ? `Client at its share of the server: ${slot.clientActive}/${slot.clientMax} sessions of this client active (--max-sessions-per-client); close one or connect as another client`
        : `Server at capacity: ${slot.active}/${slot.max} sessions active`;
    send(
      errorFrame('CAPACITY_REACHED', message, {
        active_sessions: slot.active,
        max_sessions: slot.max,
        client_sessions: slot.clientActive,
        max_sessions_per_client: slot.clientMax,
      }),
    );
    ws.close(1000);
    return;
  }
  if (closed) return host.slots.release(client);
  let environment: SessionEnvironment;
  try {
    environment = new SessionEnvironment(host.served, host.taskIndex);
  } catch (error) {
    host.slots.release(client);
    send(errorFrame('FACTORY_ERROR', (error as Error).message, { factory_name: 'SessionEnvironment' }));
    ws.close(1011);
    return;
  }
  host.opened(ws);
  const abort = new AbortController();
  let timer: NodeJS.Timeout | null = null;
  const touch = () => {
    if (idleTimeoutMs === null) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      send(errorFrame('SESSION_ERROR', `session idle for more than ${idleTimeoutMs} ms; closed`));
      ws.close(1000);
    }, idleTimeoutMs);
  };
  release = () => {
    if (timer) clearTimeout(timer);
    abort.abort();
    host.slots.release(client);
    host.closed(ws);
  };
  touch();
  flow.start(handle);

  async function handle(frame: InboundFrame) {
    touch();
    if (frame.kind === 'binary')
      return send(
        errorFrame(
          'INVALID_JSON',
          `a binary frame (${frame.bytes} bytes); the protocol's frames are JSON text`,
        ),
      );
    let message: unknown;
    try {
      message = JSON.parse(frame.text);
    } catch (error) {
      return send(errorFrame('INVALID_JSON', `Invalid JSON: ${quoted((error as Error).message, 200)}`));
    }
    const type = (message as { type?: unknown } | null)?.type;
    if (type === 'mcp') return send(mcpNotServed((message as { data?: unknown }).data));
    if (!CLIENT_TYPES.includes(type as string))
      return send(errorFrame('UNKNOWN_TYPE', `Unknown message type: ${quoted(type)}`));
    const parsed = clientMessageSchema.safeParse(message);
    if (!parsed.success)
      return send(
        errorFrame('VALIDATION_ERROR', 'Invalid message', {
          errors: parsed.error.issues.map((i) => ({ loc: i.path, msg: i.message, type: i.code })),
        }),
      );
    const msg = parsed.data;
    if (msg.type === 'step' && msg.data.text.length > limits.maxActionChars) {
      const msg_ = `data.text has ${msg.data.text.length} characters; an assistant turn here is at most ${limits.maxActionChars} characters (${limits.maxActionCharsSource})`;
      return send(
        errorFrame('VALIDATION_ERROR', `Invalid message: ${msg_}`, {
          errors: [{ loc: ['data', 'text'], msg: msg_, type: 'too_big' }],
        }),
      );
    }
    try {
      switch (msg.type) {
        case 'reset':
          if (host.draining()) {
            send(
              errorFrame(
                'SESSION_ERROR',
                'the server is draining (shutting down); reconnect to another worker',
              ),
            );
            ws.close(1001);
            return;
          }
          host.inEpisode(ws, true);
          return send({ type: 'observation', data: environment.reset(msg.data) });
        case 'step': {
          const reply = await environment.step(msg.data.text, msg.data.finish_reason, abort.signal);
          if (reply.done) host.inEpisode(ws, false);
          send({ type: 'observation', data: reply });
          if (reply.done && host.draining()) ws.close(1001);
          return;
        }
        case 'state':
          return send({ type: 'state', data: environment.state() });
        case 'close':
          ws.close(1000);
          return;
      }
    } catch (error) {
      send(errorFrame('EXECUTION_ERROR', error instanceof Error ? error.message : String(error)));
    }
  }
}
