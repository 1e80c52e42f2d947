import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createJsonlStore } from '../src/adapters/store/jsonl/index';
import { runOutcome } from './support/run-outcome';
import { parseRunConfig, type RunConfigInput } from '../src/run/config';
import { trainRun } from '../src/run/run';
import { cliRunOptions } from '../src/cli/progress';
import { TINY_SEARCHER } from './support/tiny-run';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A run small enough for seconds: two phases, a checkpoint every 2 steps (phase1 has 4). */
function tinyRunConfig(root: string, runId: string, over: Partial<RunConfigInput> = {}) {
  return parseRunConfig({
    runsDir: join(root, 'runs'),
    runId,
    corpus: { decks: 4, minSlides: 5, maxSlides: 5, smallPrintRate: 0.5, cacheDir: join(root, 'corpus') },
    policy: { layers: 1, width: 16, heads: 2, contextLength: 192, backend: 'wasm', coalesceSessions: false },
    sft: { demonstrations: 8, epochs: 1, batchSize: 8 },
    phases: [
      { name: 'phase1', steps: 4, weights: 'phase1' },
      { name: 'phase2', steps: 2, weights: 'default' },
    ],
    trainer: { batchSize: 2, saveFreq: 2 },
    searcher: TINY_SEARCHER,
    evaluation: { limit: 3 },
    ...over,
  });
}

const quiet = () => cliRunOptions(() => undefined, { isTTY: false, write: () => true });

/** Runs `trainRun`, aborting once the progress line `{phase} {step}/` is printed (after that step's metrics). */
async function runUntil(config: ReturnType<typeof tinyRunConfig>, stopAt: string | null) {
  const controller = new AbortController();
  const stream = {
    isTTY: false,
    write: (text: string) => {
      if (stopAt !== null && text.startsWith(stopAt)) controller.abort(new Error(`interrupted at ${stopAt}`));
      return true;
    },
  };
  return trainRun(config, { ...cliRunOptions(() => undefined, stream), signal: controller.signal });
}

describe('an interrupted and resumed CLI run equals the uninterrupted one', () => {
  it('before the first phase checkpoint, after a periodic one, and at the start of a later phase', async () => {
    const root = await mkdtemp(join(tmpdir(), 'searcher-rl-resume-'));
    dirs.push(root);
    await trainRun(tinyRunConfig(root, 'straight'), quiet());
    const straight = (await runOutcome(join(root, 'runs', 'straight'), ['phase1', 'phase2'])).outcome;

    const config = tinyRunConfig(root, 'interrupted');
    // Step 1 of phase 1: no periodic checkpoint yet (the SFT one and the reused "before" evaluation
    // are behind it). Step 3: after the checkpoint at step 2. Step 1 of phase 2: again before one.
    for (const stopAt of ['phase1 1/', 'phase1 3/', 'phase2 1/'])
      await expect(runUntil(config, stopAt)).rejects.toThrow();
    await runUntil(config, null);
    const runDir = join(root, 'runs', 'interrupted');
    const resumed = (await runOutcome(runDir, ['phase1', 'phase2'])).outcome;
    expect(resumed).toEqual(straight);

    // The restarts are recorded, with the records they supersede.
    const store = createJsonlStore({ dir: runDir });
    const events = (await store.doQuery({ kind: 'event', runId: 'phase1' }))
      .map(
        (r) => r.data as { type: string; nextStep: number; superseded?: { metric?: Record<string, number> } },
      )
      .filter((e) => e.type === 'resume' || e.type === 'restart');
    expect(events.map((e) => [e.type, e.nextStep, e.superseded?.metric])).toEqual([
      ['resume', 1, { 1: 1 }],
      ['resume', 3, { 3: 1 }],
      ['resume', 5, undefined],
    ]);
    const phase2 = (await store.doQuery({ kind: 'event', runId: 'phase2' }))
      .map(
        (r) => r.data as { type: string; nextStep: number; superseded?: { metric?: Record<string, number> } },
      )
      .filter((e) => e.type === 'resume' || e.type === 'restart');
    expect(phase2.map((e) => [e.type, e.nextStep, e.superseded?.metric])).toEqual([['resume', 1, { 1: 1 }]]);
    expect((await store.doQuery({ kind: 'metric', runId: 'phase1' })).map((r) => r.step)).toEqual([
      1, 1, 2, 3, 3, 4,
    ]);
  }, 600_000);
});
