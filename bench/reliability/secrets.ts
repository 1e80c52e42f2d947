// Secrets: a canary key through every remote adapter (their servers echo it back in errors, or
// redirect to another origin), inside content (a judge's reply, a generator's answer, a retrieved
// page quote it), and the CLI; it must appear in no log line, error, report or stored byte, and
// reach no origin but the configured one.
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { createScriptedPolicy } from '../../src/adapters/scripted-policy/index';
import { createJsonlStore } from '../../src/adapters/store/jsonl/index';
import { createSqliteStore, importJsonlRuns } from '../../src/adapters/store/sqlite/index';
import { ProviderCallError } from '../../src/core/errors';
import { createSearcher } from '../../src/searcher';
import { CREDENTIALED_ADAPTERS, credentialsIn } from '../../test/support/credentialed-adapters';
import { faultRun, remotePorts } from './faults';

/** Every file under `dir`, read as bytes. */
export async function* filesUnder(dir: string): AsyncGenerator<{ path: string; bytes: Buffer }> {
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

/** Console output (stdout and stderr) written while `run` runs, passed through. */
async function captured<T>(run: () => Promise<T>): Promise<{ result: T; output: string }> {
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
    return { result: await run(), output: writes.join('') };
  } finally {
    process.stdout.write = original.out;
    process.stderr.write = original.err;
  }
}

async function listen(handler: Parameters<typeof createServer>[1]) {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Every credentialed adapter against a server that redirects (301/302/303/307/308) to another origin, which records what it gets. */
async function redirects(canary: string, check: (where: string, text: string) => void) {
  let status = 307;
  const elsewhere: string[] = [];
  const other = await listen((req, res) => {
    elsewhere.push(credentialsIn(req.headers, req.url ?? '/'));
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
  const origin = await listen((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(status, { location: `${other.url}/collect` }).end());
  });
  let cases = 0;
  let refusedTyped = 0;
  try {
    for (const adapter of CREDENTIALED_ADAPTERS)
      for (const code of [301, 302, 303, 307, 308]) {
        status = code;
        cases++;
        const error = await adapter.call(origin.url, canary).catch((e: unknown) => e);
        if (ProviderCallError.isInstance(error) && error.status === code && !error.isRetryable)
          refusedTyped++;
        check(`${adapter.name} ${code}: error`, inspect(error, { depth: 10 }));
      }
  } finally {
    await Promise.all([origin.close(), other.close()]);
  }
  return {
    cases,
    refusedTyped,
    requestsToOtherOrigin: elsewhere.length,
    canaryAtOtherOrigin: elsewhere.filter((c) => c.includes(canary)).length,
  };
}

/**
 * A run whose servers answer normally but quote the canary inside content: the retrieved page,
 * the generator's answer, and the judge's reply (whole, or across the 120th character where an
 * error message is cut; such a reply is not a score). Stored in JSONL, then copied into SQLite.
 */
async function canaryInContent(dir: string, canary: string, check: (where: string, text: string) => void) {
  const fixture = async (path: string) =>
    JSON.parse(await readFile(new URL(`../../src/adapters/${path}`, import.meta.url), 'utf8')) as Record<
      string,
      unknown
    >;
  const openai = (await fixture('openai/__fixtures__/responses.json')).generator as {
    output: Array<{ content?: Array<{ text: string }> }>;
  };
  openai.output[1]!.content![0]!.text = `4.5 billion dollars (the key is ${canary})`;
  const judgeReplies = [
    `The key you use is ${canary}; {"score": 1}`,
    `${'x'.repeat(110)}${canary} {"score": 1}`,
    '{"score": 1}',
  ];
  let judged = 0;
  const server = await listen((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      const json = (value: unknown) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      if (url.includes('/retrieve')) {
        const query = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { queries: string[] })
          .queries[0];
        return json({
          result: [
            [
              {
                document: { id: `${query}.png`, contents: `"${query}"\nnotes: API_KEY=${canary}` },
                score: 1,
              },
            ],
          ],
        });
      }
      if (url.includes('generateContent')) {
        const text = judgeReplies[judged++ % judgeReplies.length]!;
        return json({
          candidates: [{ content: { parts: [{ text }], role: 'model' }, finishReason: 'STOP', index: 0 }],
        });
      }
      return json(openai);
    });
  });
  try {
    const store = createJsonlStore({ dir });
    const policy = createScriptedPolicy({
      script: ({ turn, context }) =>
        turn === 0
          ? `<search>${/topic\d+/.exec(context)?.[0] ?? 'none'}</search>`
          : '<search_complete>true</search_complete>',
    });
    const searcher = createSearcher({ policy, store, ...remotePorts(server.url, canary) }, {
      episode: { maxTurns: 2, maxTurnTokens: 16, maxContextTokens: 512, instructions: '' },
      rl: { nAgent: 4 },
    } as Parameters<typeof createSearcher>[1]);
    const prompts = Array.from({ length: 6 }, (_, i) => ({
      uid: `q${i}`,
      question: `topic${i}`,
      goldenBasenames: [`topic${i}.png`],
      reference: '4.5 billion dollars',
    }));
    const { result: batch, output } = await captured(() =>
      searcher.collect(prompts, { step: 1, runId: 'content' }),
    );
    check('content run: console output', output);
    const details = batch.episodes.map((e) => e.trajectory.rewardDetail);
    check('content run: reward causes', inspect(details, { depth: 10 }));
    const sqlite = createSqliteStore({ path: join(dir, 'records.db') });
    await importJsonlRuns(dir, sqlite);
    await sqlite.close?.();
    const stored = await readFile(join(dir, 'content', 'trajectory.jsonl'), 'utf8');
    return {
      episodes: batch.episodes.length,
      judgeRepliesQuotingTheKey: details.filter((d) => d?.status === 'missing').length,
      redactedMarksInTrajectories: stored.split('[redacted]').length - 1,
    };
  } finally {
    await server.close();
  }
}

export async function secrets(root: string): Promise<Record<string, unknown>> {
  const canary = `sk-canary-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  const leaks: string[] = [];
  const check = (where: string, text: string) => {
    if (text.includes(canary)) leaks.push(where);
  };
  const server = await echoServer();
  const errors: Record<string, string> = {};
  try {
    for (const adapter of CREDENTIALED_ADAPTERS) {
      const error = await adapter.call(server.url, canary).then(
        () => null,
        (e: unknown) => e,
      );
      errors[adapter.name] = error === null ? 'no error (unexpected)' : (error as Error).name;
      check(`${adapter.name}: error message`, String((error as Error)?.message));
      check(`${adapter.name}: error inspected`, inspect(error, { depth: 10 }));
      check(
        `${adapter.name}: error as JSON`,
        JSON.stringify(error, Object.getOwnPropertyNames(error ?? {})) ?? '',
      );
    }
  } finally {
    await server.close();
  }
  const sent = new Set(server.received.filter((v) => v.includes(canary))).size > 0;

  const redirectFigures = await redirects(canary, check);
  const contentFigures = await canaryInContent(join(root, 'content'), canary, check);

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
    adaptersChecked: CREDENTIALED_ADAPTERS.length,
    errors,
    redirects: redirectFigures,
    content: contentFigures,
    filesScanned: files,
    leaks,
  };
}
