import type { RawData, WebSocket } from 'ws';
import type { ServerLimits } from './limits';
import type { ServerMessage } from './protocol';

/** A frame as read: its text, or `binary` for a binary frame (the protocol is JSON text). */
export type InboundFrame = { kind: 'text'; text: string } | { kind: 'binary'; bytes: number };

export interface SessionFlow {
  /** Starts handling the frames read so far and those to come, one at a time, in order. */
  start(handle: (frame: InboundFrame) => Promise<void>): void;
  send(frame: ServerMessage): void;
  /** Reading is paused because this client's replies are not being read. */
  readonly stalled: boolean;
}

const yieldToOthers = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * One connection's traffic, with backpressure both ways. Frames wait in a short queue and are
 * handled one at a time, each in its own turn of the event loop, so one client cannot hold the
 * process. Reading from the socket pauses while the queue is full; reading and handling both stop
 * while the replies waiting to be read by the client exceed `maxBufferedBytes` (its TCP window
 * then closes, and a client that keeps sending blocks on its own side); a client that leaves them
 * unread for `unreadTimeoutMs` is disconnected. Pongs to its pings count as replies.
 */
export function createSessionFlow(
  ws: WebSocket,
  limits: ServerLimits,
  onStalledChange: (stalled: boolean) => void,
): SessionFlow {
  const queue: InboundFrame[] = [];
  let handle: ((frame: InboundFrame) => Promise<void>) | null = null;
  let pumping = false;
  let stalled = false;
  let stalledSince = 0;
  let watch: NodeJS.Timeout | null = null;

  const open = () => ws.readyState === ws.OPEN;

  function setStalled(value: boolean) {
    if (stalled === value) return;
    stalled = value;
    stalledSince = Date.now();
    onStalledChange(value);
    if (value) {
      // No event says that a client has read: look again while it has not.
      watch = setInterval(review, 25);
      watch.unref();
    } else {
      if (watch) clearInterval(watch);
      watch = null;
      void pump();
    }
  }

  function review() {
    if (!open()) {
      setStalled(false);
      return;
    }
    setStalled(ws.bufferedAmount > limits.maxBufferedBytes);
    if (stalled && Date.now() - stalledSince > limits.unreadTimeoutMs) {
      setStalled(false);
      ws.terminate();
      return;
    }
    const read = !stalled && queue.length < limits.maxQueuedFrames;
    if (read && ws.isPaused) ws.resume();
    else if (!read && !ws.isPaused) ws.pause();
  }

  async function pump() {
    if (pumping || !handle) return;
    pumping = true;
    try {
      // While its replies wait unread, nothing more is handled for this client either.
      while (queue.length > 0 && open() && !stalled) {
        const frame = queue.shift()!;
        review();
        // The handler answers every failure with a frame; anything else ends this session only.
        await handle(frame).catch(() => ws.terminate());
        await yieldToOthers();
      }
    } finally {
      pumping = false;
      review();
    }
  }

  ws.on('message', (raw: RawData, isBinary: boolean) => {
    if (isBinary) {
      const bytes = Array.isArray(raw)
        ? raw.reduce((n, b) => n + b.length, 0)
        : (raw as Buffer | ArrayBuffer).byteLength;
      queue.push({ kind: 'binary', bytes });
    } else queue.push({ kind: 'text', text: raw.toString() });
    review();
    void pump();
  });
  ws.on('ping', review);
  ws.once('close', () => {
    queue.length = 0;
    setStalled(false);
  });

  return {
    start(h) {
      handle = h;
      void pump();
    },
    send(frame) {
      if (!open()) return;
      ws.send(JSON.stringify(frame));
      review();
    },
    get stalled() {
      return stalled;
    },
  };
}
