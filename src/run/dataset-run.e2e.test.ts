import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import geminiFixtures from '../adapters/gemini/__fixtures__/responses.json';
import openaiFixtures from '../adapters/openai/__fixtures__/responses.json';
import { RecordedServer } from '../../test/support/recorded-server';
import { readSftDataset } from '../adapters/store/parquet/index';
import { curateCommand } from '../cli/curate';
import { cliRunOptions } from '../cli/progress';
import { parseRunConfig } from './config';
import { resolveInputPaths } from './config-file';
import { trainRun } from './run';
import { readPromptDataset } from './dataset';
import { writeReport } from './report/report';

// End to end on your own data: examples/own-data (a page folder and a JSONL of questions), a tiny
// policy, one step per phase; once offline (mock generator, rule judge) and once with local
// servers standing in for OpenAI (generator) and Gemini (judge).
let dir: string;
const lines: string[] = [];
const context = cliRunOptions((line: string) => lines.push(line), { write: () => true, isTTY: false });
// biome-ignore lint/suspicious/noExplicitAny: the example YAML is edited field by field below.
type RawConfig = Record<string, any>;
const exampleConfig = async (name: string) => {
  const path = new URL(`../../examples/own-data/${name}`, import.meta.url);
  // The example's paths are the file's, as loadRunConfig reads them.
  return resolveInputPaths(parseYaml(await readFile(path, 'utf8')), path.pathname) as RawConfig;
};
const tiny = (raw: RawConfig, runId: string) => ({
  ...raw,
  runsDir: dir,
  runId,
  phases: raw.phases.map((p: Record<string, unknown>) => ({ ...p, steps: 1 })),
  searcher: {
    ...raw.searcher,
    adapters: {
      ...raw.searcher.adapters,
      searchEngine: { ...raw.searcher.adapters.searchEngine, dbPath: join(dir, `${runId}.sqlite`) },
    },
  },
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'own-data-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('train on your own questions and pages', () => {
  it('reads the JSONL dataset with its golden pages', async () => {
    const prompts = await readPromptDataset('examples/own-data/questions.jsonl');
    expect(prompts).toHaveLength(6);
    expect(prompts[0]).toEqual({
      uid: 'acme-revenue',
      question: 'What was Acme revenue in 2019?',
      reference: '4.5 billion dollars',
      goldenBasenames: ['acme_2.png'],
    });
  });

  it('offline: the example config end to end, then report and the curation commands on the run', async () => {
    const config = parseRunConfig(tiny(await exampleConfig('config.yaml'), 'offline'));
    const result = await trainRun(config, context);
    expect(result.steps.map((s) => s.phase)).toEqual(['phase1', 'phase2']);
    expect(result.after.questions).toBe(6);
    const trajectories = (await readFile(join(result.runDir, 'phase2', 'trajectory.jsonl'), 'utf8'))
      .trim()
      .split('\n');
    expect(trajectories).toHaveLength(3 * 2);
    const events = (await readFile(join(result.runDir, 'phase2', 'event.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).data.type);
    expect(events).toEqual(
      expect.arrayContaining([
        'run.start',
        'step.start',
        'model.plan',
        'generator.response',
        'reward.detail',
        'step.end',
      ]),
    );
    expect((await stat(await writeReport(result.runDir))).size).toBeGreaterThan(1000);
    for (const command of ['buckets', 'verify', 'rounds', 'distill', 'funnel'])
      expect(
        await curateCommand(
          [command, '--run', result.runDir, '--max-success-rate', '1', '--keep-zero-ndcg'].slice(
            0,
            command === 'distill' ? 6 : 3,
          ),
          context,
        ),
      ).toBe(0);
    const funnel = JSON.parse(await readFile(join(result.runDir, 'curation', 'funnel.json'), 'utf8'));
    expect(funnel.stages[0]).toEqual({ stage: 'questions', count: 3 });
    expect(Array.isArray(await readSftDataset(join(result.runDir, 'curation', 'sft.parquet')))).toBe(true);
    expect(
      await curateCommand(['import', '--run', result.runDir, '--db', join(dir, 'offline.db')], context),
    ).toBe(0);
  }, 300_000);

  it('with local servers standing in for OpenAI and Gemini', async () => {
    const generator = await RecordedServer.start([{ json: openaiFixtures.generator }]);
    const judge = await RecordedServer.start([{ json: geminiFixtures.judge }]);
    try {
      const raw = tiny(await exampleConfig('config-openai.yaml'), 'remote');
      raw.searcher.adapters.generator = {
        ...raw.searcher.adapters.generator,
        apiKey: 'sk-test',
        baseURL: `${generator.url}/v1`,
      };
      raw.searcher.adapters.judge = {
        ...raw.searcher.adapters.judge,
        apiKey: 'test-key',
        baseUrl: judge.url,
      };
      // A scripted policy that passes the format gate, so every episode reaches the Generator and the judge.
      raw.searcher.adapters.policy = {
        type: 'scripted',
        script: [
          '<think>a</think><search>Acme</search>',
          '<think>b</think><search_complete>true</search_complete>',
        ],
      };
      // A named policy replaces the run's own tfjs one, whose settings the run would then ignore (refused).
      expect(() => parseRunConfig(raw)).toThrow(
        /config: policy.*searcher\.adapters\.policy names the policy/,
      );
      delete (raw as Record<string, unknown>).policy;
      // A named policy gets the protocol's instructions unless told otherwise; this scripted one needs none.
      raw.searcher.episode = { ...raw.searcher.episode, instructions: '' };
      const result = await trainRun(parseRunConfig(raw), context);
      expect(generator.requests.length).toBeGreaterThan(0);
      expect(judge.requests.length).toBe(generator.requests.length);
      expect(generator.requests[0]!.path).toBe('/v1/responses');
      // The fixtures' generator answers "4.5 billion dollars", and the judge says 1.0.
      expect(result.after.judgeSuccess).toBe(1);
    } finally {
      await generator.close();
      await judge.close();
    }
  }, 300_000);
});
