import WebSocket from 'ws';

/** A minimal OpenEnv client for tests and the bench: one frame out, the next frame in. */
export interface TestSession {
  request(frame: unknown): Promise<{ type: string; data: Record<string, unknown> }>;
  send(raw: string): void;
  next(): Promise<{ type: string; data: Record<string, unknown> }>;
  closed: Promise<number>;
  close(): void;
}

export function openSession(url: string, headers: Record<string, string> = {}): Promise<TestSession> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const inbox: string[] = [];
    const waiting: Array<(raw: string) => void> = [];
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.on('message', (raw) => {
      const text = raw.toString();
      const waiter = waiting.shift();
      if (waiter) waiter(text);
      else inbox.push(text);
    });
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    const next = () =>
      new Promise<string>((r) => (inbox.length > 0 ? r(inbox.shift()!) : waiting.push(r))).then((text) =>
        JSON.parse(text),
      );
    ws.once('open', () =>
      resolve({
        send: (raw) => ws.send(raw),
        next,
        request: (frame) => {
          ws.send(JSON.stringify(frame));
          return next();
        },
        closed,
        close: () => ws.close(),
      }),
    );
  });
}
