import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readLatestCheckpoint } from '../src/run/checkpoints';
import { parseRunConfig, type RunConfigInput } from '../src/run/config';
import { runStore } from '../src/run/folder';
import { evalRun, trainRun } from '../src/run/run';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

function tinyConfig(root: string, runId: string, over: Partial<RunConfigInput> = {}) {
  return parseRunConfig({
    runsDir: join(root, 'runs'),
    runId,
    corpus: { decks: 3, minSlides: 4, maxSlides: 4, smallPrintRate: 0.5, cacheDir: join(root, 'corpus') },
    policy: { layers: 1, width: 16, heads: 2, contextLength: 192, backend: 'wasm' },
    sft: { demonstrations: 4, epochs: 1, batchSize: 4 },
    phases: [{ name: 'phase1', steps: 4, weights: 'default' }],
    trainer: { batchSize: 2, saveFreq: 1, keepLast: 2 },
    searcher: {
      episode: { maxTurns: 2, maxTurnTokens: 12, maxContextTokens: 192, observationMaxChars: 30 },
      rl: { nAgent: 2 },
    },
    evaluation: { limit: 2 },
    ...over,
  });
}

describe('runs, checkpoints kept and Hugging Face folders', () => {
  it('keeps the last two checkpoints and the best, says so, and a later run starts from one as a model folder', async () => {
    const root = await mkdtemp(join(tmpdir(), 'searcher-rl-hf-run-'));
    dirs.push(root);
    const log: string[] = [];
    await trainRun(tinyConfig(root, 'first'), { onLog: (line) => log.push(line) });
    // The policy's own description (PolicyBackend.describe): its size and the backend it runs on.
    expect(log.find((line) => line.startsWith('policy: '))).toMatch(/^policy: \d+ parameters on wasm \(/);
    const kept = log.find((line) => line.startsWith('phase1 checkpoints: kept'));
    expect(kept).toMatch(/step-00000003 \(latest[^)]*\), step-00000004 \(latest\)/);
    expect(kept).toMatch(/\d+\.\d MB; removed \d/);
    // On disk: only what it kept (5 were written: step 0 and after each of 4 steps).
    const folders = await readdir(join(root, 'runs', 'first', 'phase1', 'blobs', 'checkpoints'));
    expect(folders.length).toBeGreaterThanOrEqual(2);
    expect(folders.length).toBeLessThanOrEqual(3);
    for (const step of ['step-00000003', 'step-00000004']) expect(folders).toContain(step);
    expect(
      await readdir(join(root, 'runs', 'first', 'phase1', 'blobs', 'checkpoints', 'step-00000004', 'policy')),
    ).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'optimizer.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    // The latest checkpoint still evaluates.
    expect((await evalRun(join(root, 'runs', 'first'), {}, {})).checkpoint).toBe(
      'phase1/checkpoints/step-00000004',
    );

    // A second run starts from that checkpoint's Hugging Face folder: its model and tokenizer.
    const folder = join(root, 'runs', 'first', 'phase1', 'blobs', 'checkpoints', 'step-00000004', 'policy');
    const second: string[] = [];
    const config = tinyConfig(root, 'second', {
      policy: { backend: 'wasm', initFrom: folder },
      sft: undefined,
      phases: [{ name: 'phase1', steps: 1, weights: 'default' }],
    });
    await trainRun(config, { onLog: (line) => second.push(line) });
    expect(second).toContain(`warm start: ${folder} (model folder)`);
    const first = await readLatestCheckpoint(runStore(join(root, 'runs', 'first')), 'phase1');
    const next = await readLatestCheckpoint(runStore(join(root, 'runs', 'second')), 'phase1');
    // The same model and tokenizer (width 16, its vocabulary), though the config's defaults say otherwise.
    expect(next!.checkpoint.metadata.model).toEqual(first!.checkpoint.metadata.model);
    const vocabSize = (c: typeof first) =>
      (c!.checkpoint.metadata.tokenizer as { vocabSize: number }).vocabSize;
    expect(vocabSize(next)).toBe(vocabSize(first));
    // Evaluating the second run loads its checkpoint into a policy made from the same folder.
    expect((await evalRun(join(root, 'runs', 'second'), {}, {})).checkpoint).toBe(
      'phase1/checkpoints/step-00000001',
    );
  }, 300_000);
});
