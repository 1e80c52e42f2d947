// Trust boundaries of the remote adapters (docs/reliability.md#trust-boundaries): bodies larger than
// any answer (every HTTP adapter against a server streaming 48 MB), page paths named by a search
// server (VRAG `images: 'file'`), and adapters declaring a port version the core does not support.
// Loopback only; each case must end as a typed error, with nothing read past the cap or outside the root.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { createVragImageSearch } from '../../src/adapters/search-http/index';
import {
  createMemoryStore,
  createMockGenerator,
  createMockSearchEngine,
} from '../../src/adapters/mock/index';
import { createRuleJudge } from '../../src/adapters/rule-judge/index';
import { createScriptedPolicy } from '../../src/adapters/scripted-policy/index';
import { checkPortVersion } from '../../src/core/calls/port-version';
import { createPortGateway } from '../../src/core/calls/gateway';
import { withReliability } from '../../src/core/calls/with-reliability';
import { createIcdScoreCall } from '../../src/core/icd/scoring';
import { PortOutputError, ProviderCallError, UnsupportedPortVersionError } from '../../src/core/errors';
import type { PortName } from '../../src/core/errors';
import { createSearcher } from '../../src/searcher';
import { CREDENTIALED_ADAPTERS } from '../../test/support/credentialed-adapters';

const MB = 10 ** 6;

/** A server that streams `total` bytes to every request (or until the client hangs up), counting what it got to send. */
async function streamingServer(total: number) {
  let sent = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    chunk[0] = 0x7b;
    let mine = 0;
    const pump = () => {
      while (mine < total && !res.destroyed) {
        const part = chunk.subarray(0, Math.min(chunk.length, total - mine));
        mine += part.length;
        sent += part.length;
        if (!res.write(part)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    pump();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get sent() {
      return sent;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The highest RSS seen while `run` runs (sampled every 5 ms), above the RSS before it, in MB. */
async function peakRssGrowth<T>(run: () => Promise<T>): Promise<{ result: T; peakMb: number }> {
  global.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  try {
    const result = await run();
    peak = Math.max(peak, process.memoryUsage().rss);
    return { result, peakMb: Math.round(((peak - before) / MB) * 10) / 10 };
  } finally {
    clearInterval(timer);
  }
}

/** Every adapter at its default cap against a server that would stream `total` bytes. */
async function bodies(total: number) {
  const server = await streamingServer(total);
  const rows: Array<Record<string, unknown>> = [];
  try {
    for (const adapter of CREDENTIALED_ADAPTERS) {
      const sentBefore = server.sent;
      const { result: error, peakMb } = await peakRssGrowth(() =>
        adapter.call(server.url, 'sk-bench-key-0123456789abcdef').then(
          () => null,
          (e: unknown) => e,
        ),
      );
      await new Promise((r) => setTimeout(r, 50));
      rows.push({
        adapter: adapter.name,
        refused: ProviderCallError.isInstance(error) && error.isRetryable === false,
        message: (error as Error | null)?.message.slice(0, 90) ?? 'no error',
        sentMb: Math.round(((server.sent - sentBefore) / MB) * 10) / 10,
        peakRssGrowthMb: peakMb,
      });
    }
  } finally {
    await server.close();
  }
  return {
    bodyMb: total / MB,
    adapters: rows.length,
    refusedTyped: rows.filter((r) => r.refused).length,
    maxSentMb: Math.max(...rows.map((r) => r.sentMb as number)),
    maxPeakRssGrowthMb: Math.max(...rows.map((r) => r.peakRssGrowthMb as number)),
    rows,
  };
}

const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
  'base64',
);

async function paths(root: string) {
  const imageRoot = join(root, 'corpus');
  const outside = join(root, 'outside');
  await mkdir(join(imageRoot, 'img'), { recursive: true });
  await mkdir(outside, { recursive: true });
  // The private page is a PNG whose bytes differ from the corpus's: a hit carrying them read outside.
  const privatePng = Buffer.concat([PNG, Buffer.from('private')]);
  await writeFile(join(outside, 'private.png'), privatePng);
  await writeFile(join(imageRoot, 'img', 'page_1.png'), PNG);
  await symlink(join(outside, 'private.png'), join(imageRoot, 'img', 'link.png'));
  await symlink(outside, join(imageRoot, 'linked'));
  const toOutside = relative(imageRoot, join(outside, 'private.png'));
  const hostile = [
    join(outside, 'private.png'),
    toOutside,
    `img/../${toOutside}`,
    toOutside.replaceAll('/', '\\'),
    'img/link.png',
    'linked/private.png',
    'C:\\Windows\\win.ini',
    '\\\\server\\share\\private.png',
    'img/page_1.png\0.txt',
    '',
  ];
  let answer: unknown = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let refused = 0;
  let readOutside = 0;
  const notRefused: string[] = [];
  try {
    const search = createVragImageSearch({ url, imageRoot, images: 'file' });
    for (const path of hostile) {
      answer = [[{ idx: 0, image_file: path }]];
      const outcome = await search.doSearch('q', { topK: 1 }).catch((e: unknown) => e);
      if (PortOutputError.isInstance(outcome) && outcome.field === '[0][0].image_file') refused++;
      else notRefused.push(JSON.stringify(path));
      if (Array.isArray(outcome) && outcome.some((h) => Buffer.from(h.image?.bytes ?? []).equals(privatePng)))
        readOutside++;
    }
    answer = [[{ idx: 0, image_file: 'img/page_1.png' }]];
    const inside = await search.doSearch('q', { topK: 1 });
    return {
      cases: hostile.length,
      refusedTyped: refused,
      notRefused,
      filesReadOutsideRoot: readOutside,
      pageInsideRootRead: inside[0]?.image !== undefined,
    };
  } finally {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

function portVersions() {
  const policy = createScriptedPolicy({ script: ['<search_complete>true</search_complete>'] });
  const bases: Record<PortName, object> = {
    searchEngine: createMockSearchEngine({ pages: [{ basename: 'a.png', text: 'a' }] }),
    generator: createMockGenerator({ facts: {} }),
    judge: createRuleJudge(),
    imageOps: { provider: 'img', doCrop: async () => undefined },
    embedder: { provider: 'emb', dimensions: 2, doEmbed: async () => [] },
    store: createMemoryStore(),
    policy,
    icdScorer: { provider: 'icd', doScore: async () => ({ answer: '', accuracy: 0 }) },
    tracker: {
      provider: 'trk',
      doStart: async () => null,
      doLogParams: async () => undefined,
      doLogScalars: async () => undefined,
      doFinish: async () => undefined,
    },
  };
  const give = (name: PortName, port: object) => {
    if (name === 'tracker') return checkPortVersion('tracker', port);
    if (name === 'icdScorer') return createIcdScoreCall(port as never);
    createPortGateway({ [name]: port });
    if (name === 'policy')
      return createSearcher({
        policy: port as never,
        searchEngine: bases.searchEngine as never,
        generator: bases.generator as never,
        judge: bases.judge as never,
      });
    return (withReliability as (p: unknown, n: PortName) => unknown)(port, name);
  };
  let cases = 0;
  let refused = 0;
  let accepted = 0;
  for (const [name, base] of Object.entries(bases) as Array<[PortName, object]>) {
    for (const version of ['v2', 'v0', 'V1', undefined, 1]) {
      cases++;
      try {
        give(name, { ...base, specificationVersion: version });
      } catch (error) {
        if (UnsupportedPortVersionError.isInstance(error) && error.port === name) refused++;
      }
    }
    try {
      give(name, { ...base, specificationVersion: 'v1' });
      accepted++;
    } catch {
      // counted as not accepted
    }
  }
  return { ports: Object.keys(bases).length, cases, refusedTyped: refused, v1Accepted: accepted };
}

export async function trust(root: string): Promise<Record<string, unknown>> {
  await mkdir(root, { recursive: true });
  return {
    figure: 'trust',
    // The case (a 48 MB retriever reply), and a body larger than every default cap.
    bodies48Mb: await bodies(48 * MB),
    bodies1Gb: await bodies(1000 * MB),
    paths: await paths(root),
    portVersions: portVersions(),
  };
}
