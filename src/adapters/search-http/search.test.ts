import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { faultSuite } from '../../../test/support/fault-suite';
import { serverPerTest } from '../../../test/support/server-per-test';
import { RecordedServer } from '../../../test/support/recorded-server';
import { InvalidArgumentError, PortOutputError } from '../../core/errors';
import { withReliability } from '../../core/calls/with-reliability';
import fixtures from './__fixtures__/responses.json';
import { imageInfo } from './image-size';
import { createBraveWebSearch, createSearchR1Retriever, createVragImageSearch } from './search';

const ONE_PIXEL_PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);
const CANARY = 'BSAcanary000000000000000000000001';
const server = serverPerTest(() => RecordedServer.start());
afterEach(() => {
  vi.unstubAllEnvs();
});

describe('createSearchR1Retriever', () => {
  it('posts {queries, topk, return_scores} to /retrieve and reads documents with scores', async () => {
    server().reply({ json: fixtures.search_r1 });
    const hits = await createSearchR1Retriever({ url: `${server().url}/` }).doSearch('who was evan morris', {
      topK: 3,
    });
    expect(server().requests[0]).toMatchObject({
      method: 'POST',
      path: '/retrieve',
      json: { queries: ['who was evan morris'], topk: 3, return_scores: true },
    });
    expect(hits.map((h) => [h.basename, h.score])).toEqual([
      ['0', 0.8231],
      ['1', 0.7514],
      ['2', 0.6109],
    ]);
    expect(hits[0]!.text).toMatch(/^"Evan Morris"\nEvan Morris/);
  });

  it('accepts bare documents (return_scores off) and rejects a wrong shape naming the field', async () => {
    server().reply(
      { json: { result: [[{ id: '7', contents: '"T"\nx' }]] } },
      { json: { result: [[{ document: { id: '7' } }]] } },
    );
    const retriever = createSearchR1Retriever({ url: server().url });
    expect(await retriever.doSearch('q', { topK: 1 })).toEqual([
      { id: '7', basename: '7', text: '"T"\nx', score: 0 },
    ]);
    await expect(retriever.doSearch('q', { topK: 1 })).rejects.toMatchObject({
      field: 'result[0][0].document',
    });
  });

  describe('faults', () => {
    faultSuite({
      server,
      port: 'searchEngine',
      adapter: () => createSearchR1Retriever({ url: server().url }),
      call: (engine, signal) => engine.doSearch('q', { topK: 3, signal }),
      success: { json: fixtures.search_r1 },
      rateLimited: { status: 429, json: { detail: 'Too Many Requests' } },
      serverError: { status: 500, json: fixtures.server_error },
      check: (hits) => expect(hits).toHaveLength(3),
    });
  });
});

describe('createVragImageSearch', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'vrag-'));
    await mkdir(join(root, 'search_engine/corpus/img'), { recursive: true });
    await writeFile(join(root, 'search_engine/corpus/img/acme_report_2.png'), ONE_PIXEL_PNG);
    await writeFile(join(root, 'search_engine/corpus/img/acme_report_5.png'), ONE_PIXEL_PNG);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('posts {queries, top_k, vrag_ret} to /search and loads the page images from disk', async () => {
    server().reply({ json: fixtures.vrag });
    const hits = await createVragImageSearch({ url: server().url, imageRoot: root }).doSearch(
      'acme revenue 2019',
      { topK: 5 },
    );
    expect(server().requests[0]).toMatchObject({
      method: 'POST',
      path: '/search',
      json: { queries: ['acme revenue 2019'], top_k: 5, vrag_ret: true },
    });
    expect(hits.map((h) => h.basename)).toEqual(['acme_report_2.png', 'acme_report_5.png']);
    expect(hits[0]!.image).toMatchObject({ mimeType: 'image/png', width: 1, height: 1 });
    expect(Buffer.from(hits[0]!.image!.bytes).equals(ONE_PIXEL_PNG)).toBe(true);
  });

  it("speaks the first demo server's GET /search?queries=… when asked", async () => {
    server().reply({ json: fixtures.vrag });
    await createVragImageSearch({ url: server().url, method: 'GET', images: 'none' }).doSearch('acme', {
      topK: 2,
    });
    expect(server().requests[0]).toMatchObject({ method: 'GET', path: '/search' });
    expect(server().requests[0]!.query.getAll('queries')).toEqual(['acme']);
  });

  it('keeps auth header values out of errors', async () => {
    server().reply({ status: 401, json: { detail: 'invalid token: Bearer retriever-token-CANARY-0001' } });
    const error = (await createSearchR1Retriever({
      url: server().url,
      headers: { authorization: 'Bearer retriever-token-CANARY-0001' },
    })
      .doSearch('q', { topK: 1 })
      .catch((e: unknown) => e)) as Error;
    expect(error).toMatchObject({ status: 401 });
    expect(error.message).not.toContain('retriever-token-CANARY-0001');
  });

  it('redacts before it cuts: no part of a key straddling the cut of an error body survives', async () => {
    const token = 'retriever-token-CANARY-0002';
    const headers = { authorization: `Bearer ${token}` };
    server().reply(
      { status: 401, text: `${'x'.repeat(280)}${token} denied` },
      { text: `<html>${'y'.repeat(60)}${token}</html>` },
    );
    const retriever = createSearchR1Retriever({ url: server().url, headers });
    const denied = (await retriever.doSearch('q', { topK: 1 }).catch((e: unknown) => e)) as Error;
    const malformed = (await retriever.doSearch('q', { topK: 1 }).catch((e: unknown) => e)) as Error;
    expect(denied).toMatchObject({ status: 401 });
    expect(malformed.message).toMatch(/malformed response body/);
    for (const error of [denied, malformed]) expect(error.message).not.toMatch(/retriever-|CANARY/);
  });

  it('can return basenames only, and names a missing image file', async () => {
    server().reply({ json: fixtures.vrag });
    const hits = await createVragImageSearch({ url: server().url, images: 'none' }).doSearch('q', {
      topK: 1,
    });
    expect(hits).toEqual([
      { id: './search_engine/corpus/img/acme_report_2.png', basename: 'acme_report_2.png', score: 1 },
    ]);
    server().reply({ json: [[{ idx: 0, image_file: 'missing.png' }]] });
    await expect(
      createVragImageSearch({ url: server().url, imageRoot: root }).doSearch('q', { topK: 1 }),
    ).rejects.toThrow(/cannot read page image .*missing\.png/);
  });

  it('reads only files inside imageRoot: absolute paths, .. segments and links out are refused, naming the field', async () => {
    const outside = await mkdtemp(join(tmpdir(), 'vrag-outside-'));
    try {
      await writeFile(join(outside, 'private.png'), ONE_PIXEL_PNG);
      const imageRoot = join(root, 'search_engine');
      await symlink(join(outside, 'private.png'), join(imageRoot, 'corpus/img/link.png'));
      await symlink(outside, join(imageRoot, 'corpus/linked-dir'));
      await symlink(join(imageRoot, 'corpus/img/acme_report_2.png'), join(imageRoot, 'corpus/inside.png'));
      const relativeOut = relative(imageRoot, join(outside, 'private.png'));
      const refused = [
        join(outside, 'private.png'),
        relativeOut,
        `corpus/img/../../${relativeOut}`,
        'corpus/img/../img/acme_report_2.png',
        'corpus\\..\\..\\x.png',
        'C:\\Windows\\win.ini',
        'corpus/img/link.png',
        'corpus/linked-dir/private.png',
      ];
      for (const path of refused) {
        server().reply({ json: [[{ idx: 0, image_file: path }]] });
        const error = await createVragImageSearch({ url: server().url, imageRoot })
          .doSearch('q', { topK: 1 })
          .catch((e: unknown) => e);
        expect(PortOutputError.isInstance(error), path).toBe(true);
        expect(error, path).toMatchObject({ port: 'searchEngine', field: '[0][0].image_file' });
        expect((error as Error).message).toMatch(/imageRoot/);
      }
      // A link that stays inside the root is read.
      server().reply({ json: [[{ idx: 0, image_file: 'corpus/inside.png' }]] });
      const [hit] = await createVragImageSearch({ url: server().url, imageRoot }).doSearch('q', { topK: 1 });
      expect(Buffer.from(hit!.image!.bytes).equals(ONE_PIXEL_PNG)).toBe(true);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('caps a page image at maxImageBytes, from disk and from images.baseUrl (typed, not retried)', async () => {
    const big = Buffer.concat([ONE_PIXEL_PNG, Buffer.alloc(4096)]);
    await writeFile(join(root, 'big.png'), big);
    server().reply({ json: [[{ idx: 0, image_file: 'big.png' }]] });
    const fromDisk = await createVragImageSearch({ url: server().url, imageRoot: root, maxImageBytes: 1024 })
      .doSearch('q', { topK: 1 })
      .catch((e: unknown) => e);
    expect(fromDisk).toMatchObject({ port: 'searchEngine', isRetryable: false });
    expect((fromDisk as Error).message).toMatch(/larger than maxImageBytes \(1024 bytes; 4166 bytes\)/);
    const images = await RecordedServer.start([{ text: big.toString('latin1') }]);
    try {
      const fromUrl = await createVragImageSearch({
        url: server().url,
        images: { baseUrl: images.url },
        maxImageBytes: 1024,
      })
        .doSearch('q', { topK: 1 })
        .catch((e: unknown) => e);
      expect(fromUrl).toMatchObject({ port: 'searchEngine', isRetryable: false });
      expect((fromUrl as Error).message).toMatch(/larger than maxImageBytes/);
    } finally {
      await images.close();
    }
  });

  describe('faults', () => {
    faultSuite({
      server,
      port: 'searchEngine',
      adapter: () => createVragImageSearch({ url: server().url, images: 'none' }),
      call: (engine, signal) => engine.doSearch('q', { topK: 3, signal }),
      success: { json: fixtures.vrag },
      rateLimited: { status: 429, json: { detail: 'Too Many Requests' } },
      serverError: { status: 500, json: fixtures.server_error },
      check: (hits) => expect(hits).toHaveLength(2),
    });
  });
});

describe('createBraveWebSearch', () => {
  it('sends the key in its header, reads title and description without markup, URL as basename', async () => {
    server().reply({ json: fixtures.brave });
    const hits = await createBraveWebSearch({
      apiKey: CANARY,
      baseUrl: server().url,
      country: 'us',
    }).doSearch('acme revenue 2019', { topK: 2 });
    const request = server().requests[0]!;
    expect(request.path).toBe('/res/v1/web/search');
    expect(Object.fromEntries(request.query)).toEqual({ q: 'acme revenue 2019', count: '2', country: 'us' });
    expect(request.headers['x-subscription-token']).toBe(CANARY);
    expect(hits[0]).toEqual({
      id: 'https://investors.acme.example/reports/2019-annual',
      basename: 'https://investors.acme.example/reports/2019-annual',
      score: 1,
      text: 'Acme Corp annual report 2019\nRevenue for 2019 was 4.5 billion dollars, up 12 percent.',
    });
  });

  it('reads the key from BRAVE_SEARCH_API_KEY, or says how to provide it; never echoes it', async () => {
    vi.stubEnv('BRAVE_SEARCH_API_KEY', '');
    const error = await createBraveWebSearch({ baseUrl: server().url })
      .doSearch('q', { topK: 1 })
      .catch((e: unknown) => e);
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/set the BRAVE_SEARCH_API_KEY environment variable/);
    vi.stubEnv('BRAVE_SEARCH_API_KEY', CANARY);
    server().reply({
      status: 401,
      json: { error: { detail: `The provided subscription token ${CANARY} is invalid.` } },
    });
    const denied = (await createBraveWebSearch({ baseUrl: server().url })
      .doSearch('q', { topK: 1 })
      .catch((e: unknown) => e)) as Error;
    expect(denied).toMatchObject({ status: 401 });
    expect(denied.message).not.toContain(CANARY);
  });

  it('waits until X-RateLimit-Reset when Brave gives no Retry-After', async () => {
    server().reply(
      { status: 429, json: fixtures.brave_rate_limited, headers: { 'x-ratelimit-reset': '0.04, 2400000' } },
      { json: fixtures.brave },
    );
    const delays: number[] = [];
    const engine = withReliability(
      createBraveWebSearch({ apiKey: CANARY, baseUrl: server().url }),
      'searchEngine',
      {},
      { random: () => 0, onRetry: ({ delayMs }) => delays.push(delayMs) },
    );
    expect(await engine.doSearch('q', { topK: 2 })).toHaveLength(2);
    expect(delays).toEqual([40]);
  });

  describe('faults', () => {
    faultSuite({
      server,
      port: 'searchEngine',
      adapter: () => createBraveWebSearch({ apiKey: CANARY, baseUrl: server().url }),
      call: (engine, signal) => engine.doSearch('q', { topK: 2, signal }),
      success: { json: fixtures.brave },
      rateLimited: { status: 429, json: fixtures.brave_rate_limited },
      serverError: { status: 500, json: fixtures.server_error },
      check: (hits) => expect(hits).toHaveLength(2),
    });
  });
});

describe('imageInfo', () => {
  it('reads PNG and JPEG sizes from their headers', () => {
    expect(imageInfo(ONE_PIXEL_PNG)).toEqual({ mimeType: 'image/png', width: 1, height: 1 });
    const jpeg = new Uint8Array([
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x04, 0x00, 0x00, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x01, 0x2c, 0x02, 0x58,
      0x03,
    ]);
    expect(imageInfo(jpeg)).toEqual({ mimeType: 'image/jpeg', width: 600, height: 300 });
    expect(imageInfo(new Uint8Array([1, 2, 3]))).toBeNull();
  });
});
