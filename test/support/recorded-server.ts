import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
  json: unknown;
}

/** What the server does for one request. */
export type Reply =
  | { status?: number; json: unknown; headers?: Record<string, string> }
  | { status?: number; text: string; headers?: Record<string, string> }
  /** Accept the request and never answer (until the client gives up). */
  | { hang: true };

/**
 * A local HTTP server on 127.0.0.1 that answers with scripted replies (recorded response shapes
 * and faults) in order, the last one repeating, and records every request. Offline by design.
 */
export class RecordedServer {
  readonly requests: RecordedRequest[] = [];
  private replies: Reply[] = [];
  private readonly hanging = new Set<ServerResponse>();
  private server: Server | null = null;

  static async start(replies: Reply[] = []): Promise<RecordedServer> {
    const server = new RecordedServer();
    server.replies = [...replies];
    await server.listen();
    return server;
  }

  get url(): string {
    const { port } = this.server!.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Requests accepted with `hang` whose connection the client has not closed yet. */
  get openHanging(): number {
    return this.hanging.size;
  }

  /** Waits (up to `ms`) until every hanging request's connection has been closed by the client. */
  async waitForHangingClosed(ms = 2000): Promise<number> {
    const until = Date.now() + ms;
    while (this.hanging.size > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    return this.hanging.size;
  }

  reply(...replies: Reply[]): this {
    this.replies = replies;
    return this;
  }

  private async listen(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const url = new URL(req.url ?? '/', 'http://127.0.0.1');
        let json: unknown;
        try {
          json = body ? JSON.parse(body) : undefined;
        } catch {
          json = undefined;
        }
        this.requests.push({
          method: req.method ?? 'GET',
          path: url.pathname,
          query: url.searchParams,
          headers: req.headers,
          body,
          json,
        });
        const reply = this.replies.length > 1 ? this.replies.shift()! : this.replies[0];
        if (!reply) {
          res
            .writeHead(500, { 'content-type': 'application/json' })
            .end('{"error":{"message":"no reply scripted"}}');
          return;
        }
        if ('hang' in reply) {
          this.hanging.add(res);
          res.on('close', () => this.hanging.delete(res));
          return;
        }
        const headers = {
          ...('json' in reply ? { 'content-type': 'application/json' } : { 'content-type': 'text/plain' }),
          ...reply.headers,
        };
        res
          .writeHead(reply.status ?? 200, headers)
          .end('json' in reply ? JSON.stringify(reply.json) : reply.text);
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
