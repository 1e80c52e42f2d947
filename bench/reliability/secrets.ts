// Secrets: a canary key through every remote adapter (their servers echo it back in errors) and
// the CLI; it must appear in no log line, error, report or stored byte.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { createGeminiGenerator, createGeminiJudge } from '../../src/adapters/gemini/index';
import {
  createOpenAIEmbedder,
  createOpenAIGenerator,
  createOpenAIJudge,
} from '../../src/adapters/openai/index';
import { createOpenAICompatibleCompletions } from '../../src/adapters/openai-compatible/policy';
import {
  createBraveWebSearch,
  createSearchR1Retriever,
  createVragImageSearch,
} from '../../src/adapters/search-http/index';
import { faultRun } from './faults';

/** Every file under `dir`, read as bytes. */
async function* filesUnder(dir: string): AsyncGenerator<{ path: string; bytes: Buffer }> {
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* filesUnder(path);
    else if ((await stat(path)).isFile()) yield { path, bytes: await readFile(path) };
  }
}

/** A server answering 401 with the credentials it received quoted back, as some providers do. */
async function echoServer() {
  const received: string[] = [];
  const server = createServer((req, res) => {
    const credentials = [
      req.headers.authorization,
      req.headers['x-goog-api-key'],
      req.headers['x-subscription-token'],
      new URL(req.url ?? '/', 'http://x').searchParams.get('key'),
    ].filter((v): v is string => typeof v === 'string');
    received.push(...credentials);
    req.resume();
    req.on('end', () =>
      res.writeHead(401, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          error: { message: `Incorrect API key provided: ${credentials.join(' ')}`, code: 401 },
        }),
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export async function secrets(root: string): Promise<Record<string, unknown>> {
  const canary = `sk-canary-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  const leaks: string[] = [];
  const check = (where: string, text: string) => {
    if (text.includes(canary)) leaks.push(where);
  };
  const server = await echoServer();
  const adapters: Array<[string, () => Promise<unknown>]> = [
    [
      'openai generator',
      () =>
        createOpenAIGenerator({ model: 'm', apiKey: canary, baseURL: `${server.url}/v1` }).doAnswer('q', []),
    ],
    [
      'openai judge',
      () =>
        createOpenAIJudge({ model: 'm', apiKey: canary, baseURL: `${server.url}/v1` }).doScore('q', 'a', 'b'),
    ],
    [
      'openai embedder',
      () =>
        createOpenAIEmbedder({
          model: 'm',
          dimensions: 4,
          apiKey: canary,
          baseURL: `${server.url}/v1`,
        }).doEmbed([{ kind: 'text', text: 'x' }]),
    ],
    [
      'gemini generator',
      () => createGeminiGenerator({ model: 'm', apiKey: canary, baseUrl: server.url }).doAnswer('q', []),
    ],
    [
      'gemini judge',
      () => createGeminiJudge({ model: 'm', apiKey: canary, baseUrl: server.url }).doScore('q', 'a', 'b'),
    ],
    [
      'openai-compatible',
      () =>
        createOpenAICompatibleCompletions({
          model: 'm',
          apiKey: canary,
          baseURL: `${server.url}/v1`,
        }).doComplete({ prompt: [1, 2], max_tokens: 2 }),
    ],
    [
      'search-r1 retriever',
      () =>
        createSearchR1Retriever({ url: server.url, headers: { authorization: `Bearer ${canary}` } }).doSearch(
          'q',
          { topK: 1 },
        ),
    ],
    [
      'vrag image search',
      () =>
        createVragImageSearch({ url: server.url, headers: { 'x-api-key': canary }, images: 'none' }).doSearch(
          'q',
          { topK: 1 },
        ),
    ],
    [
      'brave web search',
      () => createBraveWebSearch({ apiKey: canary, baseUrl: server.url }).doSearch('q', { topK: 1 }),
    ],
  ];
  const errors: Record<string, string> = {};
  try {
    for (const [name, call] of adapters) {
      const error = await call().then(
        () => null,
        (e: unknown) => e,
      );
      errors[name] = error === null ? 'no error (unexpected)' : (error as Error).name;
      check(`${name}: error message`, String((error as Error)?.message));
      check(`${name}: error inspected`, inspect(error, { depth: 10 }));
      check(`${name}: error as JSON`, JSON.stringify(error, Object.getOwnPropertyNames(error ?? {})) ?? '');
    }
  } finally {
    await server.close();
  }
  const sent = new Set(server.received.filter((v) => v.includes(canary))).size > 0;

  // A fault run whose keys are the canary: its store and console output.
  const writes: string[] = [];
  const original = {
    out: process.stdout.write.bind(process.stdout),
    err: process.stderr.write.bind(process.stderr),
  };
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => (
    writes.push(String(chunk)), (original.out as (...a: unknown[]) => boolean)(chunk, ...rest)
  )) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => (
    writes.push(String(chunk)), (original.err as (...a: unknown[]) => boolean)(chunk, ...rest)
  )) as typeof process.stderr.write;
  try {
    await faultRun(join(root, 'store'), 100, 0.2, 11, canary);
  } finally {
    process.stdout.write = original.out;
    process.stderr.write = original.err;
  }
  check('fault run console output', writes.join(''));

  // The CLI with the keys in its environment: a train run that fails (a bad config) and a run of the demo.
  const cli = async (args: string[]) =>
    new Promise<string>((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
        cwd: process.cwd(),
        env: { ...process.env, OPENAI_API_KEY: canary, GEMINI_API_KEY: canary, BRAVE_SEARCH_API_KEY: canary },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString('utf8')));
      child.stderr.on('data', (c: Buffer) => (output += c.toString('utf8')));
      child.on('exit', () => resolve(output));
    });
  const badConfig = join(root, 'bad.json');
  await writeFile(badConfig, JSON.stringify({ runsDir: join(root, 'runs'), trainer: { batchSize: -1 } }));
  check('CLI train (bad config) output', await cli(['train', '--config', badConfig]));
  check('CLI demo --scripted output', await cli(['demo', '--scripted', '--out', join(root, 'demo')]));
  let files = 0;
  for await (const file of filesUnder(root)) {
    files++;
    if (file.bytes.includes(canary)) leaks.push(`stored file ${file.path}`);
  }
  return {
    figure: 'secrets',
    canarySentToServers: sent,
    adaptersChecked: adapters.length,
    errors,
    filesScanned: files,
    leaks,
  };
}
