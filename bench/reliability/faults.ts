// The fault run: episodes of a scripted Searcher whose search (a Search-R1 HTTP retriever),
// generator (OpenAI Responses shape) and judge (Gemini shape) are local servers that inject 429 +
// Retry-After, 500, hangs, connection resets, malformed and truncated bodies at a set rate.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import { createJsonlStore } from '../../src/adapters/store/jsonl/index';
import { createScriptedPolicy } from '../../src/adapters/scripted-policy/index';
import { createSearchR1Retriever } from '../../src/adapters/search-http/index';
import { createOpenAIGenerator } from '../../src/adapters/openai/index';
import { createGeminiJudge } from '../../src/adapters/gemini/index';
import { createRandom } from '../../src/core/random';
import { currentRecords } from '../../src/core/store/records';
import { createSearcher } from '../../src/searcher';

export const FAULTS = ['rate-limited', 'server-error', 'hang', 'reset', 'malformed', 'truncated'] as const;
type Fault = (typeof FAULTS)[number];

const fixture = async (path: string) =>
  JSON.parse(await readFile(new URL(`../../src/adapters/${path}`, import.meta.url), 'utf8')) as Record<
    string,
    unknown
  >;

/** One server for the three ports (by path); each request draws a fault with probability `rate` (seeded). */
export async function startFaultServer(
  rate: number,
  seed: number,
  options: { onRequest?: (body: string, headers: Record<string, unknown>, url: string) => void } = {},
) {
  const openai = await fixture('openai/__fixtures__/responses.json');
  const gemini = await fixture('gemini/__fixtures__/responses.json');
  const random = createRandom(seed);
  const injected: Record<Fault, number> = {
    'rate-limited': 0,
    'server-error': 0,
    hang: 0,
    reset: 0,
    malformed: 0,
    truncated: 0,
  };
  const requests = { searchEngine: 0, generator: 0, judge: 0 };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const url = req.url ?? '/';
      options.onRequest?.(body, req.headers, url);
      const port = url.includes('/retrieve')
        ? 'searchEngine'
        : url.includes('generateContent')
          ? 'judge'
          : 'generator';
      requests[port]++;
      let success: unknown;
      if (port === 'searchEngine') {
        const query = (JSON.parse(body) as { queries: string[] }).queries[0] ?? '';
        success = {
          result: [[{ document: { id: `${query}.png`, contents: `"${query}"\n${query} facts` }, score: 1 }]],
        };
      } else success = port === 'judge' ? gemini.judge : openai.generator;
      const fault: Fault | null = random.nextFloat() < rate ? FAULTS[random.nextInt(FAULTS.length)]! : null;
      if (fault) injected[fault]++;
      const json = (status: number, value: unknown, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(value));
      switch (fault) {
        case 'rate-limited':
          return json(
            429,
            port === 'generator'
              ? openai.rate_limited
              : { error: { code: 429, message: 'Resource exhausted', status: 'RESOURCE_EXHAUSTED' } },
            { 'retry-after': '0.05' },
          );
        case 'server-error':
          return json(500, { error: { message: 'internal error' } });
        case 'hang':
          return; // never answers; the client's timeout ends it
        case 'reset':
          return req.socket.destroy();
        case 'malformed':
          return res.writeHead(200, { 'content-type': 'application/json' }).end('{"truncated": [');
        case 'truncated': {
          const text = JSON.stringify(success);
          res.writeHead(200, {
            'content-type': 'application/json',
            'content-length': String(Buffer.byteLength(text)),
          });
          res.write(text.slice(0, Math.floor(text.length / 2)));
          return setTimeout(() => req.socket.destroy(), 5);
        }
        default:
          return json(200, success);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    injected,
    requests,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The three remote ports pointed at `url`, with `apiKey` (a canary in the secrets figure). */
export function remotePorts(url: string, apiKey: string) {
  return {
    searchEngine: createSearchR1Retriever({ url, headers: { authorization: `Bearer ${apiKey}` } }),
    generator: createOpenAIGenerator({ model: 'gpt-5-mini', apiKey, baseURL: `${url}/v1` }),
    judge: createGeminiJudge({ model: 'gemini-3-flash-preview', apiKey, baseUrl: url }),
  };
}

export const FAULT_CALLS = { timeoutMs: 400, maxRetries: 3 };

/** Episodes of a scripted Searcher (search the question, then finish) through the fault server. */
export async function faultRun(
  storeDir: string,
  episodes: number,
  rate: number,
  seed = 7,
  apiKey = 'sk-fault-run',
): Promise<Record<string, unknown>> {
  const server = await startFaultServer(rate, seed);
  try {
    const nAgent = 4;
    const promptsPerStep = 25;
    const prompts = Array.from({ length: Math.ceil(episodes / nAgent) }, (_, i) => ({
      uid: `q${i}`,
      question: `topic${i}`,
      goldenBasenames: [`topic${i}.png`],
      reference: '4.5 billion dollars',
    }));
    const policy = createScriptedPolicy({
      script: ({ turn, context }) =>
        turn === 0
          ? `<search>${/topic\d+/.exec(context)?.[0] ?? 'none'}</search>`
          : '<search_complete>true</search_complete>',
    });
    const store = createJsonlStore({ dir: storeDir });
    const callPolicies = { searchEngine: FAULT_CALLS, generator: FAULT_CALLS, judge: FAULT_CALLS };
    const searcher = createSearcher({ policy, store, ...remotePorts(server.url, apiKey) }, {
      episode: {
        maxTurns: 2,
        maxTurnTokens: 16,
        maxContextTokens: 512,
        observationMaxChars: 60,
        instructions: '',
      },
      rl: { nAgent },
      calls: callPolicies,
    } as Parameters<typeof createSearcher>[1]);
    let produced = 0;
    let lost = 0;
    let unmasked = 0;
    const missingByCause: Record<string, number> = {};
    for (let start = 0, step = 1; start < prompts.length; start += promptsPerStep, step++) {
      const batch = await searcher.collect(prompts.slice(start, start + promptsPerStep), {
        step,
        runId: 'faults',
      });
      produced += batch.episodes.length;
      lost += batch.lostSamples.length;
      for (const { trajectory } of batch.episodes) {
        if (trajectory.reward === null && trajectory.advantage !== null) unmasked++;
        if (trajectory.rewardDetail?.status === 'missing') {
          const key = `${trajectory.rewardDetail.cause.stage}:${trajectory.rewardDetail.cause.kind}`;
          missingByCause[key] = (missingByCause[key] ?? 0) + 1;
        }
      }
    }
    const stored = currentRecords(await store.doQuery({ kind: 'trajectory', runId: 'faults' }), []).length;
    const missing = Object.values(missingByCause).reduce((a, b) => a + b, 0);
    const faultsInjected = Object.values(server.injected).reduce((a, b) => a + b, 0);
    // Calls the episodes made (the scripted Searcher searches once, then each episode whose search
    // worked asks the generator once, and each answer is judged once); requests beyond them are retries.
    const searchFailed = Object.entries(missingByCause)
      .filter(([k]) => k.startsWith('episode:'))
      .reduce((n, [, v]) => n + v, 0);
    const generatorFailed = Object.entries(missingByCause)
      .filter(([k]) => k.startsWith('generator:'))
      .reduce((n, [, v]) => n + v, 0);
    const episodesTotal = prompts.length * nAgent;
    const calls = {
      searchEngine: episodesTotal,
      generator: episodesTotal - searchFailed,
      judge: episodesTotal - searchFailed - generatorFailed,
    };
    const retries = {
      searchEngine: server.requests.searchEngine - calls.searchEngine,
      generator: server.requests.generator - calls.generator,
      judge: server.requests.judge - calls.judge,
    };
    return {
      figure: 'fault-run',
      episodes: prompts.length * nAgent,
      faultRate: rate,
      requests: server.requests,
      faultsInjected: server.injected,
      faultsInjectedTotal: faultsInjected,
      calls,
      retries,
      retriesTotal: retries.searchEngine + retries.generator + retries.judge,
      completed: produced - missing,
      missing,
      missingByCause,
      trajectoriesLost: prompts.length * nAgent - stored,
      lostSamples: lost,
      failedRewardsWithAdvantage: unmasked,
    };
  } finally {
    await server.close();
  }
}
