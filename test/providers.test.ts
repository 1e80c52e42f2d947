import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createMockSearchEngine } from '../src/adapters/mock/index';
import { createScriptedPolicy } from '../src/adapters/scripted-policy/index';
import { createGeminiJudge } from '../src/adapters/gemini/index';
import { createOpenAIGenerator } from '../src/adapters/openai/index';
import { createJsonlStore } from '../src/adapters/store/jsonl/index';
import { createSearcher } from '../src/index';
import geminiFixtures from '../src/adapters/gemini/__fixtures__/responses.json';
import openaiFixtures from '../src/adapters/openai/__fixtures__/responses.json';
import { RecordedServer } from './support/recorded-server';

const OPENAI_CANARY = 'sk-canary-e2e-0c1d2e3f4a5b6c7d8e9f';
const GEMINI_CANARY = 'AIzaSyCanaryE2E000000000000000000000002';

let openai: RecordedServer;
let gemini: RecordedServer;
let dir: string;
beforeEach(async () => {
  openai = await RecordedServer.start([{ json: openaiFixtures.generator }]);
  gemini = await RecordedServer.start();
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-e2e-'));
});
afterEach(async () => {
  await Promise.all([openai.close(), gemini.close(), rm(dir, { recursive: true, force: true })]);
});

async function everythingStored(root: string): Promise<string> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
  return (await Promise.all(files.map((f) => readFile(f, 'utf8')))).join('\n');
}

const prompt = {
  uid: 'acme',
  question: 'Acme revenue 2019?',
  reference: '4.5 billion dollars',
  goldenBasenames: ['acme_2.png'],
};
const searcher = (
  extra: Record<string, unknown> = {},
  pageText = 'Acme revenue 2019 was 4.5 billion dollars',
) =>
  createSearcher(
    {
      policy: createScriptedPolicy({
        script: ['<search>acme revenue 2019</search>', '<search_complete>true</search_complete>'],
      }),
      searchEngine: createMockSearchEngine({ pages: [{ basename: 'acme_2.png', text: pageText }] }),
      generator: createOpenAIGenerator({
        model: 'gpt-5-mini',
        apiKey: OPENAI_CANARY,
        baseURL: `${openai.url}/v1`,
      }),
      judge: createGeminiJudge({
        model: 'gemini-3-flash-preview',
        apiKey: GEMINI_CANARY,
        baseUrl: gemini.url,
      }),
      store: createJsonlStore({ dir }),
    },
    { rl: { nAgent: 2 }, calls: { judge: { maxRetries: 2 } }, ...extra },
  );

describe('providers end to end', () => {
  it('answers with the OpenAI generator, scores with the Gemini judge, retrying a 503 by default', async () => {
    gemini.reply({ status: 503, json: geminiFixtures.server_error }, { json: geminiFixtures.judge });
    const batch = await searcher().collect([prompt], { runId: 'e2e' });
    expect(batch.episodes.map((e) => e.trajectory.finalAnswer)).toEqual([
      '4.5 billion dollars',
      '4.5 billion dollars',
    ]);
    expect(batch.episodes.map((e) => e.trajectory.reward)).toEqual([1, 1]);
    expect(gemini.requests).toHaveLength(3);
  });

  it('keeps both keys out of stored records, errors and logs (canary)', async () => {
    gemini.reply({
      status: 400,
      json: {
        error: { code: 400, message: `API key not valid: ${GEMINI_CANARY}`, status: 'INVALID_ARGUMENT' },
      },
    });
    openai.reply(
      {
        status: 401,
        json: {
          error: {
            message: `Incorrect API key provided: ${OPENAI_CANARY}.`,
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        },
      },
      { json: openaiFixtures.generator },
    );
    const logged: string[] = [];
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((level) =>
      vi
        .spyOn(console, level)
        .mockImplementation((...args: unknown[]) => logged.push(args.map(String).join(' '))),
    );
    const batch = await searcher().collect([prompt], { runId: 'canary' });
    spies.forEach((spy) => spy.mockRestore());
    // The 401 fails one generation, the 400 every judgement: all recorded as missing, with causes.
    const details = batch.episodes.map((e) => e.trajectory.rewardDetail!);
    expect(details.every((d) => d.status === 'missing')).toBe(true);
    const causes = details.map((d) => (d.status === 'missing' ? d.cause.message : '')).join('\n');
    expect(causes).toContain('[redacted]');
    const stored = await everythingStored(dir);
    expect(stored).toContain('"status":"missing"');
    for (const canary of [OPENAI_CANARY, GEMINI_CANARY]) {
      expect(stored).not.toContain(canary);
      expect(causes).not.toContain(canary);
      expect(logged.join('\n')).not.toContain(canary);
    }
  });

  it('keeps a key that arrives inside content (a judge reply, an answer, a retrieved page) out of errors, stored records and logs', async () => {
    const judgeSays = (text: string) => ({
      json: {
        candidates: [{ content: { parts: [{ text }], role: 'model' }, finishReason: 'STOP', index: 0 }],
      },
    });
    // One reply quotes the key whole, the other puts it across the 120th character, where a message is cut.
    gemini.reply(
      judgeSays(`The key you use is ${GEMINI_CANARY}; {"score": 1}`),
      judgeSays(`${'x'.repeat(110)}${GEMINI_CANARY} {"score": 1}`),
    );
    const generator = structuredClone(openaiFixtures.generator);
    generator.output[1]!.content![0]!.text = `4.5 billion dollars (key ${OPENAI_CANARY})`;
    openai.reply({ json: generator });
    const logged: string[] = [];
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map((level) =>
      vi
        .spyOn(console, level)
        .mockImplementation((...args: unknown[]) => logged.push(args.map(String).join(' '))),
    );
    const batch = await searcher(
      {},
      `Acme revenue 2019 was 4.5 billion dollars. Deploy notes: OPENAI_API_KEY=${OPENAI_CANARY}`,
    ).collect([prompt], { runId: 'quoted' });
    spies.forEach((spy) => spy.mockRestore());
    const details = batch.episodes.map((e) => e.trajectory.rewardDetail!);
    expect(details.map((d) => d.status)).toEqual(['missing', 'missing']);
    const causes = details.map((d) => (d.status === 'missing' ? d.cause : null));
    expect(causes.map((c) => c?.kind)).toEqual(['invalid_output', 'invalid_output']);
    const stored = await everythingStored(dir);
    // The content made it to the store, the keys did not.
    expect(stored).toContain('Deploy notes: OPENAI_API_KEY=[redacted]');
    expect(stored).toContain('4.5 billion dollars (key [redacted])');
    for (const canary of [OPENAI_CANARY, GEMINI_CANARY]) {
      for (const k of [canary.length, 12, 8]) {
        const head = canary.slice(0, k);
        expect(stored, head).not.toContain(head);
        expect(inspect(causes, { depth: 10 }), head).not.toContain(head);
        expect(logged.join('\n')).not.toContain(head);
      }
    }
  });
});
