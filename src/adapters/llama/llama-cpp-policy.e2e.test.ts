import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { llamaCppSkipReason, SMOLLM2_GGUF } from '../../../test/support/smollm2';
import { InvalidArgumentError } from '../../core/errors';
import type { LogProbBatch } from '../../ports/policy-backend';
import { llamaCppAdapterOf } from './llama-cpp-policy';
import { createLlamaCppRollouts } from './llama-cpp-rollouts';
import { createLlamaPolicy, type LlamaPolicy } from './policy';

// `rollouts: 'llama-cpp'` on SmolLM2-135M-Instruct (skipped without node-llama-cpp, an optional
// peer dependency, or without the model: scripts/fetch-models.sh).

const path = SMOLLM2_GGUF;
const skipReason = llamaCppSkipReason();

const maxAbsDiff = (a: number[][], b: number[][]) =>
  Math.max(...a.flatMap((row, i) => row.map((v, k) => Math.abs(v - b[i]![k]!))));

describe.skipIf(skipReason !== '')(`the Llama policy with llama.cpp rollouts ${skipReason}`, () => {
  let policy: LlamaPolicy | undefined;
  afterAll(async () => policy?.dispose());

  it('refuses full fine-tuning (every update would change the GGUF’s weights), naming the setting', async () => {
    const error = await createLlamaPolicy({ model: path, finetune: 'full', rollouts: 'llama-cpp' }).catch(
      (e: unknown) => e,
    );
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect((error as InvalidArgumentError).argument).toBe('rollouts');
  }, 300_000);

  it('records the trainer’s log-probs, hands each LoRA update to llama.cpp, whose adapter matches the trainer’s', async () => {
    policy = await createLlamaPolicy({
      model: path,
      finetune: 'lora',
      rollouts: 'llama-cpp',
      llamaCpp: { sequencesPerContext: 2, threads: 1 },
      optimizer: { learningRate: 0.05 },
      seed: 4,
    });
    const prompt = policy.tokenizer.encode(policy.chatFormat!.prompt('Name a large river.'));
    const roll = async () => {
      const session = await policy!.begin([prompt, prompt]);
      const turn = await session.generateTurn([0, 1], {
        stopAfter: [],
        maxTokens: 8,
        temperature: 1,
        topP: 1,
      });
      await session.end();
      return turn;
    };
    const batchOf = (turn: Awaited<ReturnType<typeof roll>>): LogProbBatch => ({
      inputIds: turn.map((o) => [...prompt, ...o.steps.map((s) => s.tokenId)]),
      positions: turn.map((o) => o.steps.map((s) => s.position)),
    });
    const first = await roll();
    const batch = batchOf(first);
    // The steps carry the training engine's log-probs (rescored), not llama.cpp's.
    expect(
      maxAbsDiff(
        first.map((o) => o.steps.map((s) => s.logProb)),
        await policy.logProbs(batch),
      ),
    ).toBeLessThan(1e-5);

    const scored = batch.positions.reduce((n, p) => n + p.length, 0);
    const result = await policy.update(batch, (logProbs) => ({
      value: -logProbs.flat().reduce((a, b) => a + b, 0) / scored,
      gradNewLogProbs: logProbs.map((row) => row.map(() => -1 / scored)),
    }));
    expect(result.applied).toBe(true);
    const second = await roll();
    expect(
      maxAbsDiff(
        second.map((o) => o.steps.map((s) => s.logProb)),
        await policy.logProbs(batchOf(second)),
      ),
    ).toBeLessThan(1e-5);

    // llama.cpp with the adapter as handed over, against the trainer with and without it.
    const folder = await mkdtemp(join(tmpdir(), 'searcher-rl-llama-cpp-test-'));
    try {
      const adapter = join(folder, 'adapter.gguf');
      await writeFile(adapter, llamaCppAdapterOf(await policy.save(), policy.modelConfig));
      const rollouts = await createLlamaCppRollouts({
        model: path,
        tokenizer: policy.tokenizer,
        contextLength: 128,
        sequencesPerContext: 2,
        threads: 1,
        seed: 9,
        loraAdapter: { path: adapter },
      });
      try {
        const session = await rollouts.begin([prompt, prompt]);
        const turn = await session.generateTurn([0, 1], {
          stopAfter: [],
          maxTokens: 16,
          temperature: 1,
          topP: 1,
        });
        await session.end();
        const cpp = turn.map((o) => o.steps.map((s) => s.logProb));
        const withAdapter = await policy.logProbs(batchOf(turn));
        const base = await policy.baseReference().logProbs(batchOf(turn));
        const adapterEffect = maxAbsDiff(withAdapter, base);
        expect(adapterEffect).toBeGreaterThan(0.3);
        expect(maxAbsDiff(cpp, withAdapter)).toBeLessThan(adapterEffect / 3);
      } finally {
        await rollouts.dispose();
      }
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  }, 600_000);
});
