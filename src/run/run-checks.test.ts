import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigValidationError, DatasetValidationError } from '../core/errors';
import { parseRunConfig, type RunConfigInput } from './config';
import { trainRun } from './run';

// Issue 24, items 17 and 18: a run is checked before its folder is written (the questions, and
// that the longest prompt and one turn fit the policy's context), and a refusal names the fields.
let dir = '';
const quiet = { onLog: () => undefined };
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'run-checks-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const ownData = (runId: string, over: Partial<RunConfigInput> = {}): RunConfigInput => ({
  runsDir: join(dir, 'runs'),
  runId,
  dataset: { path: 'examples/own-data/questions.jsonl' },
  policy: { layers: 1, width: 16, heads: 2, contextLength: 256, backend: 'cpu' },
  phases: [{ name: 'phase1', steps: 1, weights: 'phase1' }],
  trainer: { batchSize: 2 },
  ...over,
  searcher: {
    adapters: {
      searchEngine: {
        type: 'sqlite-fts',
        pagesDir: 'examples/own-data/pages',
        dbPath: join(dir, `${runId}.sqlite`),
      },
      imageOps: { type: 'sharp' },
      generator: { type: 'mock' },
      judge: { type: 'rule' },
      ...over.searcher?.adapters,
    },
    ...over.searcher,
  } as RunConfigInput['searcher'],
});

const folders = async () => readdir(join(dir, 'runs')).catch(() => [] as string[]);

describe('a run writes nothing until it is checked', () => {
  it('questions that do not validate leave no run folder (no config.json)', async () => {
    const questions = join(dir, 'bad.jsonl');
    await writeFile(
      questions,
      '{"uid": "a", "question": "q?", "reference": "r"}\n{"uid": "b", "question": ""}\n',
    );
    const error = await trainRun(
      parseRunConfig(ownData('bad-data', { dataset: { path: questions } })),
      quiet,
    ).catch((e: unknown) => e);
    expect(DatasetValidationError.isInstance(error)).toBe(true);
    expect(await folders()).not.toContain('bad-data');
  }, 120_000);

  it("the config trap: the protocol's instructions (searcher.episode.instructions null) do not fit a 256-token policy; refused before the run starts, naming the fields to change", async () => {
    // Issue 25: without instructions a run of its own policy on your data now gets one line that fits
    // (COMPACT_INSTRUCTIONS); the protocol's own, asked for by null, still cannot fit and is refused.
    const error = await trainRun(
      parseRunConfig(
        ownData('trap', {
          searcher: { rl: { nAgent: 2 }, episode: { instructions: null } } as RunConfigInput['searcher'],
        }),
      ),
      quiet,
    ).catch((e: unknown) => e);
    expect(ConfigValidationError.isInstance(error)).toBe(true);
    const message = (error as Error).message;
    expect(message).toMatch(/the longest prompt \(question '[\w-]+'\) is \d+ tokens/);
    for (const field of [
      'searcher.episode.instructions',
      'policy.contextLength',
      'searcher.episode.maxContextTokens',
    ])
      expect(message).toContain(`'${field}'`);
    // The prompt alone is past the window: a smaller turn cannot help, so it is not offered.
    expect(message).not.toContain(`'searcher.episode.maxTurnTokens'`);
    expect(await folders()).not.toContain('trap');
    // Checked before the other ports are built: not even the page index is written.
    await expect(stat(join(dir, 'trap.sqlite'))).rejects.toThrow();
  }, 120_000);

  it('a turn budget that leaves no room, and a window larger than the policy, are refused by field', async () => {
    const turn = await trainRun(
      parseRunConfig(
        ownData('turn', {
          searcher: { episode: { instructions: '', maxTurnTokens: 250 } } as RunConfigInput['searcher'],
        }),
      ),
      quiet,
    ).catch((e: unknown) => e);
    expect(ConfigValidationError.isInstance(turn)).toBe(true);
    expect((turn as Error).message).toMatch(/maxTurnTokens 250\) it needs \d+/);
    const wide = await trainRun(
      parseRunConfig(
        ownData('wide', {
          searcher: { episode: { instructions: '', maxContextTokens: 512 } } as RunConfigInput['searcher'],
        }),
      ),
      quiet,
    ).catch((e: unknown) => e);
    expect(ConfigValidationError.isInstance(wide)).toBe(true);
    expect((wide as ConfigValidationError).field).toBe('searcher.episode.maxContextTokens');
    expect((wide as Error).message).toMatch(/policy\.contextLength/);
    // A named policy: the fields are its window and the prompt (it has no policy.contextLength). Its
    // window follows the policy by default (null); a window set too small for the prompt is refused.
    const named = await trainRun(
      parseRunConfig({
        ...ownData('named', {
          searcher: {
            episode: { maxContextTokens: 64 },
            adapters: { policy: { type: 'scripted', script: ['<search_complete>true</search_complete>'] } },
          } as RunConfigInput['searcher'],
        }),
        policy: undefined,
      }),
      quiet,
    ).catch((e: unknown) => e);
    expect(ConfigValidationError.isInstance(named)).toBe(true);
    expect((named as Error).message).toMatch(/'searcher\.episode\.maxContextTokens': at least \d+/);
    expect((named as Error).message).not.toMatch(/'policy\.contextLength'/);
    const written = await folders();
    for (const id of ['turn', 'wide', 'named']) expect(written).not.toContain(id);
  }, 120_000);

  it("a slide run's warm start with maxContextTokens null: the demonstrations fit the policy's context (they took 8192 and failed inside the model)", async () => {
    const result = await trainRun(
      parseRunConfig({
        runsDir: join(dir, 'runs'),
        runId: 'null-window',
        corpus: { decks: 3, minSlides: 5, maxSlides: 5, cacheDir: join(dir, 'corpus') },
        policy: { layers: 1, width: 16, heads: 2, contextLength: 64, backend: 'cpu' },
        sft: { demonstrations: 4, epochs: 1 },
        phases: [],
        searcher: { episode: { maxContextTokens: null, maxTurns: 7, maxTurnTokens: 24 } },
        evaluation: { limit: 2 },
      }),
      quiet,
    );
    expect(result.steps).toEqual([]);
  }, 180_000);
});
