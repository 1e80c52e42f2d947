import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ProviderCallError } from '../src/core/errors';
import { CREDENTIALED_ADAPTERS, credentialsIn } from './support/credentialed-adapters';
import { RecordedServer } from './support/recorded-server';

const KEY = 'sk-redirect-canary-7f3a9c1e5b2d4f6a8c0e';

let origin: RecordedServer;
let elsewhere: RecordedServer;
beforeEach(async () => {
  origin = await RecordedServer.start();
  elsewhere = await RecordedServer.start([{ json: { ok: true } }]);
});
afterEach(async () => {
  await Promise.all([origin.close(), elsewhere.close()]);
});

describe('a credential never leaves the configured origin', () => {
  for (const adapter of CREDENTIALED_ADAPTERS) {
    for (const status of [301, 302, 303, 307, 308]) {
      it(`${adapter.name}: a ${status} to another origin is refused, typed and not retried, without sending the key there`, async () => {
        origin.reply({ status, text: '', headers: { location: `${elsewhere.url}/stolen?from=redirect` } });
        const error = await adapter.call(origin.url, KEY).catch((e: unknown) => e);
        // The configured server got the key; the other origin got nothing carrying it.
        expect(origin.requests.some((r) => credentialsIn(r.headers, r.path).includes(KEY))).toBe(true);
        for (const request of elsewhere.requests)
          expect(credentialsIn(request.headers, `${request.path}?${request.query}`)).not.toContain(KEY);
        expect(elsewhere.requests).toHaveLength(0);
        expect(ProviderCallError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ port: adapter.port, status, isRetryable: false });
        expect((error as Error).message).toMatch(/redirect/);
        expect((error as Error).message).toContain(new URL(elsewhere.url).origin);
        expect((error as Error).message).not.toContain(KEY);
      });
    }

    it(`${adapter.name}: another host name for the same address is another origin`, async () => {
      const other = elsewhere.url.replace('127.0.0.1', 'localhost');
      origin.reply({ status: 307, text: '', headers: { location: `${other}/x` } });
      const error = await adapter.call(origin.url, KEY).catch((e: unknown) => e);
      expect(elsewhere.requests).toHaveLength(0);
      expect(error).toMatchObject({ status: 307, isRetryable: false });
    });
  }

  it('follows a redirect within the configured origin, keeping the key there', async () => {
    const search = CREDENTIALED_ADAPTERS.find((a) => a.name === 'search-r1 retriever')!;
    origin.reply(
      { status: 308, text: '', headers: { location: '/v2/retrieve' } },
      { json: { result: [[{ document: { id: '1', contents: '"T"\nx' }, score: 1 }]] } },
    );
    const hits = await search.call(origin.url, KEY);
    expect(hits).toEqual([{ id: '1', basename: '1', text: '"T"\nx', score: 1 }]);
    expect(origin.requests.map((r) => [r.method, r.path])).toEqual([
      ['POST', '/retrieve'],
      ['POST', '/v2/retrieve'],
    ]);
    expect(origin.requests[1]!.json).toEqual(origin.requests[0]!.json);
  });

  it('gives up on a loop of redirects within the origin', async () => {
    const judge = CREDENTIALED_ADAPTERS.find((a) => a.name === 'openai judge')!;
    origin.reply({ status: 307, text: '', headers: { location: '/v1/responses' } });
    const error = await judge.call(origin.url, KEY).catch((e: unknown) => e);
    expect(error).toMatchObject({ port: 'judge', isRetryable: false });
    expect((error as Error).message).toMatch(/redirects/);
    expect(origin.requests.length).toBeLessThanOrEqual(6);
  });
});
