import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProviderCallError } from '../src/core/errors';
import { CREDENTIALED_ADAPTERS } from './support/credentialed-adapters';

const KEY = 'sk-cap-canary-5e1d3c7b9a0f2e4d6c8b';

/** A server that streams `total` bytes of JSON-looking text (or until the client hangs up), and counts what it got to send. */
class StreamingServer {
  sent = 0;
  closed: Promise<void> = Promise.resolve();
  private server: Server | null = null;

  constructor(
    private readonly total: number,
    private readonly options: { status?: number; declareLength?: boolean } = {},
  ) {}

  get url(): string {
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      req.resume();
      this.closed = new Promise((resolve) => res.on('close', () => resolve()));
      res.writeHead(this.options.status ?? 200, {
        'content-type': 'application/json',
        ...(this.options.declareLength && { 'content-length': String(this.total) }),
      });
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      chunk[0] = 0x7b; // '{'
      const pump = () => {
        while (this.sent < this.total && !res.destroyed) {
          const part = chunk.subarray(0, Math.min(chunk.length, this.total - this.sent));
          this.sent += part.length;
          if (!res.write(part)) {
            res.once('drain', pump);
            return;
          }
        }
        if (!res.destroyed) res.end();
      };
      pump();
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}

let server: StreamingServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

describe('every HTTP adapter caps what it reads', () => {
  const cap = 256 * 1024;
  for (const adapter of CREDENTIALED_ADAPTERS) {
    describe(adapter.name, () => {
      beforeEach(async () => {
        server = await new StreamingServer(64 * 2 ** 20).start();
      });

      it('stops reading past maxResponseBytes, with a typed error that is not retried', async () => {
        const error = await adapter
          .call(server!.url, KEY, { maxResponseBytes: cap })
          .catch((e: unknown) => e);
        expect(ProviderCallError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ port: adapter.port, isRetryable: false });
        expect((error as Error).message).toMatch(/larger than maxResponseBytes \(262144 bytes/);
        await server!.closed;
        // What the server got to send is what the socket buffers held, not the 64 MiB.
        expect(server!.sent).toBeLessThan(16 * 2 ** 20);
      });
    });
  }

  it('refuses a declared Content-Length over the cap before reading the body', async () => {
    server = await new StreamingServer(4 * 2 ** 20, { declareLength: true }).start();
    const judge = CREDENTIALED_ADAPTERS.find((a) => a.name === 'gemini judge')!;
    const error = await judge.call(server.url, KEY, { maxResponseBytes: 1024 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ isRetryable: false, message: expect.stringMatching(/4194304 bytes/) });
  });

  it("keeps an error status's retry rule: a huge 503 body is cut, the 503 stays retryable", async () => {
    server = await new StreamingServer(32 * 2 ** 20, { status: 503 }).start();
    for (const name of ['search-r1 retriever', 'openai judge', 'gemini generator']) {
      const adapter = CREDENTIALED_ADAPTERS.find((a) => a.name === name)!;
      const error = await adapter.call(server.url, KEY).catch((e: unknown) => e);
      expect(error, name).toMatchObject({ status: 503, isRetryable: true });
    }
  });

  it('has a default cap: a 48 MB retriever reply is refused', async () => {
    server = await new StreamingServer(48 * 10 ** 6).start();
    const retriever = CREDENTIALED_ADAPTERS.find((a) => a.name === 'search-r1 retriever')!;
    const error = await retriever.call(server.url, KEY).catch((e: unknown) => e);
    expect(error).toMatchObject({ isRetryable: false, message: expect.stringMatching(/8388608 bytes/) });
    await server.closed;
    expect(server.sent).toBeLessThan(24 * 10 ** 6);
  });

  it('refuses a setting that is not a positive integer, naming it', () => {
    const retriever = CREDENTIALED_ADAPTERS.find((a) => a.name === 'search-r1 retriever')!;
    expect(() => retriever.call('http://127.0.0.1:9', KEY, { maxResponseBytes: -1 })).toThrow(
      /createSearchR1Retriever\.maxResponseBytes/,
    );
  });
});
