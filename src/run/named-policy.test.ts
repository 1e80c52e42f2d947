import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeTinyLlama } from '../adapters/llama/__fixtures__/tiny-llama';
import { parseRunConfig } from './config';
import { evalRun, trainRun } from './run';

// A policy named in searcher.adapters that trains (the Llama engine, on a tiny random model):
// its warm start is a checkpoint of the run folder, which a continued run and `eval` load.

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'named-policy-'));
  await mkdir(join(dir, 'model'));
  await writeTinyLlama(join(dir, 'model'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const example = join(import.meta.dirname, '..', '..', 'examples', 'own-data');
const quiet = {};

/** Each evaluated question's policy tokens and their log-probs, from a store run's trajectory records. */
async function tokensOf(runDir: string, storeRun: string): Promise<Map<string, string>> {
  const lines = (await readFile(join(runDir, storeRun, 'trajectory.jsonl'), 'utf8')).trim().split('\n');
  return new Map(
    lines.map((line) => {
      const { data } = JSON.parse(line);
      const steps = data.tokenSteps.map((s: { tokenId: number; logProb: number }) => [
        s.tokenId,
        s.logProb.toFixed(4),
      ]);
      return [data.promptUid, JSON.stringify(steps)];
    }),
  );
}

describe('a trainable policy named in searcher.adapters', () => {
  it('loads its warm start in a continued run and in eval, as the run that trained it used it', async () => {
    const config = parseRunConfig({
      runsDir: join(dir, 'runs'),
      runId: 'named',
      seed: 1,
      dataset: { path: join(example, 'questions.jsonl') },
      sft: { demonstrations: 6, epochs: 2, batchSize: 2, learningRate: 1e-2 },
      phases: [],
      evaluation: { limit: 3 },
      searcher: {
        episode: { instructions: 'Search, then complete.', maxTurns: 2, maxTurnTokens: 6, temperature: 0 },
        adapters: {
          policy: { type: 'llama', model: join(dir, 'model'), finetune: 'lora', intraOpThreads: 1 },
          searchEngine: {
            type: 'sqlite-fts',
            pagesDir: join(example, 'pages'),
            dbPath: join(dir, 'index.sqlite'),
          },
          imageOps: { type: 'sharp' },
          generator: { type: 'extractive' },
          judge: { type: 'rule' },
        },
      },
    });
    const first = await trainRun(config, quiet);
    const runDir = join(dir, 'runs', 'named');
    expect(first.warnings).toEqual([]);
    const trained = await tokensOf(runDir, 'eval-after-rl');
    expect(trained.size).toBe(3);

    const evaluated = await evalRun(runDir, {}, quiet);
    expect(evaluated.checkpoint).toMatch(/^searcher\.adapters\.policy \(llama\) from sft\/checkpoints\//);
    expect(await tokensOf(runDir, 'eval-dataset')).toEqual(trained);

    // A continued run starts from the loaded warm start: its figures before RL are the first run's.
    const logs: string[] = [];
    const continued = await trainRun(config, { onLog: (line) => logs.push(line) });
    expect(logs).toContain('SFT warm start: loaded sft/checkpoints/step-00000000');
    expect(continued.before).toEqual(first.before);
    expect(logs.join('\n')).not.toMatch(/measured again/);

    // Continued with another evaluation: the figures recorded under the old one are measured again.
    const other = parseRunConfig({ ...config, evaluation: { ...config.evaluation, limit: 2 } });
    const again: string[] = [];
    const narrowed = await trainRun(other, { onLog: (line) => again.push(line) });
    expect(again).toContain(
      "reader ceiling: recorded under other evaluation settings than this run's; measured again",
    );
    expect(again).toContain(
      "eval-before-rl: recorded under other evaluation settings than this run's; measured again",
    );
    expect(narrowed.before.questions).toBe(2);
    expect(narrowed.readerCeiling?.questions).toBe(2);
    expect(narrowed.baselines.every((b) => b.summary.questions === 2)).toBe(true);
  }, 120_000);
});
