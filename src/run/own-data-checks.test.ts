import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigValidationError, InvalidArgumentError } from '../core/errors';
import { loadRunConfig, parseRunConfig, type RunConfigInput } from './config';
import { trainRun } from './run';

// Issue 25's friction points on a run of your own data, each refused before anything is written
// or warned about while running: an empty page folder, golden pages the index lacks, a phase that
// cannot learn; and the default prompt now fits a small policy's context.
let dir = '';
const log: string[] = [];
const quiet = { onLog: (line: string) => void log.push(line) };
const pages = join(import.meta.dirname, '..', '..', 'examples', 'own-data', 'pages');
const questions = join(import.meta.dirname, '..', '..', 'examples', 'own-data', 'questions.jsonl');
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'own-data-checks-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const config = (runId: string, over: Partial<RunConfigInput> = {}, engine: Record<string, unknown> = {}) =>
  parseRunConfig({
    runsDir: join(dir, 'runs'),
    runId,
    dataset: { path: questions },
    policy: { layers: 1, width: 16, heads: 2, contextLength: 256, backend: 'cpu' },
    sft: { demonstrations: 0 },
    phases: [{ name: 'phase1', steps: 2, weights: 'phase1' }],
    trainer: { batchSize: 2 },
    evaluation: { limit: 2 },
    ...over,
    searcher: {
      rl: { nAgent: 2 },
      adapters: {
        searchEngine: {
          type: 'sqlite-fts',
          pagesDir: pages,
          dbPath: join(dir, `${runId}.sqlite`),
          ...engine,
        },
        generator: { type: 'extractive' },
        judge: { type: 'rule' },
      },
    },
  });
const folders = async () => readdir(join(dir, 'runs')).catch(() => [] as string[]);

describe('a run on your own data is checked before it starts', () => {
  it('refuses an empty page folder, and a search engine that holds no pages, naming the field; no run folder', async () => {
    const empty = join(dir, 'empty-pages');
    await mkdir(empty);
    const error = await trainRun(config('empty', {}, { pagesDir: empty }), quiet).catch((e: unknown) => e);
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/holds no pages/);
    // The default search engine (none configured) holds no pages either.
    const none = await trainRun(
      parseRunConfig({
        runsDir: join(dir, 'runs'),
        runId: 'no-engine',
        dataset: { path: questions },
        policy: { layers: 1, width: 16, heads: 2, contextLength: 256, backend: 'cpu' },
      }),
      quiet,
    ).catch((e: unknown) => e);
    expect(ConfigValidationError.isInstance(none)).toBe(true);
    expect((none as ConfigValidationError).field).toBe('searcher.adapters.searchEngine');
    expect(await folders()).not.toContain('empty');
    expect(await folders()).not.toContain('no-engine');
  }, 120_000);

  it('refuses golden pages the index does not have (a count, the first one), unless dataset.allowMissingGolden', async () => {
    const wrong = join(dir, 'wrong-golden.jsonl');
    const rows = (await readFile(questions, 'utf8')).trim().split('\n');
    rows[1] = rows[1]!.replace('acme_3.png', 'acme_3.jpg');
    await writeFile(wrong, `${rows.join('\n')}\n`);
    const refused = await trainRun(config('golden', { dataset: { path: wrong } }), quiet).catch(
      (e: unknown) => e,
    );
    expect(ConfigValidationError.isInstance(refused)).toBe(true);
    expect((refused as ConfigValidationError).field).toBe('dataset.allowMissingGolden');
    expect((refused as Error).message).toMatch(
      /1 of the 5 golden pages, named by 1 of 6 questions, are not in the index of searcher\.adapters\.searchEngine\.pagesDir \(6 pages\), e\.g\. 'acme_3\.jpg' of question 'acme-headcount'/,
    );
    expect(await folders()).not.toContain('golden');
    log.length = 0;
    const allowed = await trainRun(
      config('golden-allowed', { dataset: { path: wrong, allowMissingGolden: true }, phases: [] }),
      quiet,
    );
    expect(allowed.after.questions).toBe(2);
    expect(log.join('\n')).toMatch(/warning: 1 of the 5 golden pages,.* \(dataset\.allowMissingGolden\)/);
  }, 120_000);

  it('warns when a phase cannot learn: no valid action from a fresh policy, on the progress line, in the log and in summary.json', async () => {
    const progress: string[] = [];
    log.length = 0;
    const result = await trainRun(config('dead'), {
      ...quiet,
      onProgress: (event) => {
        if (event.task === 'phase1' && event.detail) progress.push(event.detail);
      },
    });
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0]).toMatch(
      /phase1: in its first 2 steps \(8 episodes\) no episode made a valid action\. Likely cause: the policy starts from fresh weights .*sft\.demonstrations/,
    );
    expect(progress.at(-1)).toMatch(/\(no valid action!\)/);
    expect(log).toContain(`warning: ${result.warnings[0]}`);
    const summary = JSON.parse(await readFile(join(result.runDir, 'summary.json'), 'utf8'));
    expect(summary.warnings).toEqual(result.warnings);
  }, 120_000);

  it("the default prompt fits a small policy's 256-token context (no instructions: '' needed), and the warm start makes the policy act (no phase warning)", async () => {
    const parsed = config('default-prompt', {
      sft: { demonstrations: 6, epochs: 30, batchSize: 2 },
      phases: [{ name: 'phase1', steps: 1, weights: 'phase1' }],
    });
    expect(parsed.searcher.episode.instructions).toMatch(/^Search: <search>query<\/search>/);
    log.length = 0;
    const result = await trainRun(parsed, quiet);
    expect(log.join('\n')).toMatch(/demonstrations: 6 episodes kept from 6 of 6 training questions/);
    // No warning: phase 1's episodes made valid actions (a fresh policy makes none, as the test above shows).
    expect(result.warnings).toEqual([]);
    // The run's figure stands beside the dataset's baselines, measured with the same reader and judge:
    // naive RAG finds these pages with the questions' words; the reader cannot answer without them.
    const figures = new Map(result.baselines.map((b) => [b.name, b.summary.judgeSuccess]));
    expect([...figures.keys()]).toEqual(['naive RAG', 'direct answer']);
    expect(figures.get('naive RAG')).toBeGreaterThan(0.5);
    expect(figures.get('direct answer')).toBe(0);
  }, 180_000);

  it("loads a config's input paths from the config file's folder, and makes the index's folder", async () => {
    const folder = join(dir, 'elsewhere');
    await mkdir(join(folder, 'data'), { recursive: true });
    await writeFile(join(folder, 'data', 'q.jsonl'), await readFile(questions));
    await writeFile(
      join(folder, 'run.yaml'),
      [
        'dataset: { path: data/q.jsonl }',
        'searcher:',
        '  adapters:',
        `    searchEngine: { type: sqlite-fts, pagesDir: ${pages}, dbPath: ${join(dir, 'made', 'as', 'needed.sqlite')} }`,
      ].join('\n'),
    );
    const loaded = await loadRunConfig(join(folder, 'run.yaml'), { overrides: ['runsDir=out'] });
    expect(loaded.dataset!.path).toBe(join(folder, 'data', 'q.jsonl'));
    // What the run writes is the working directory's.
    expect(loaded.runsDir).toBe('out');
    const result = await trainRun(
      parseRunConfig({
        ...loaded,
        runsDir: join(dir, 'runs'),
        runId: 'paths',
        sft: { demonstrations: 0 },
        phases: [],
        policy: { layers: 1, width: 16, heads: 2, contextLength: 256, backend: 'cpu' },
      }),
      quiet,
    );
    expect(result.after.questions).toBe(6);
    await stat(join(dir, 'made', 'as', 'needed.sqlite'));
  }, 120_000);

  it("indexes a Search-R1 JSONL corpus from the config (searchEngine.corpusPath) and evaluates NQ's parquet in answer mode by Search-R1's answer check", async () => {
    const fixtures = join(import.meta.dirname, '..', 'adapters');
    const result = await trainRun(
      parseRunConfig({
        runsDir: join(dir, 'runs'),
        runId: 'nq',
        dataset: { path: join(fixtures, 'store', 'parquet', '__fixtures__', 'nq_search_test.parquet') },
        policy: { layers: 1, width: 16, heads: 2, contextLength: 256, backend: 'cpu' },
        sft: { demonstrations: 4 },
        phases: [],
        evaluation: { limit: 3 },
        searcher: {
          episode: { mode: 'answer', maxTurns: 2, maxTurnTokens: 16 },
          reward: { scheme: 'search-r1' },
          adapters: {
            searchEngine: {
              type: 'sqlite-fts',
              corpusPath: join(fixtures, 'sqlite-fts', '__fixtures__', 'search-r1-corpus.jsonl'),
              dbPath: join(dir, 'nq.sqlite'),
            },
          },
        },
      }),
      quiet,
    );
    expect(result.after).toMatchObject({ questions: 3, successBy: 'answer' });
    // The Searcher answers itself: no frozen reader's ceiling is measured, nor warned about.
    expect(result.readerCeiling).toBeNull();
    // The 10-passage sample answers none of NQ's questions: the warm start says so instead of training on nothing.
    expect(result.warnings[0]).toMatch(/^warm start: no demonstration succeeded/);
  }, 120_000);
});
