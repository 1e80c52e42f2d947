import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { greedyTurn, llamaCppSkipReason, SMOLLM2_GGUF } from '../../../test/support/smollm2';
import { InvalidArgumentError } from '../../core/errors';
import type { Tokenizer } from '../../ports/types';
import { createHfTokenizer } from '../../provider-utils/hf-tokenizer';
import { readGguf } from './gguf';
import { ggufTokenizerFiles } from './gguf-tokenizer';
import { createLlamaCppRollouts, type LlamaCppRollouts } from './llama-cpp-rollouts';
import { createLlamaPolicy } from './policy';

// llama.cpp rollouts on SmolLM2-135M-Instruct (skipped without node-llama-cpp, an optional peer
// dependency, or without the model: scripts/fetch-models.sh).

const path = SMOLLM2_GGUF;
const skipReason = llamaCppSkipReason();

describe('createLlamaCppRollouts: refusals before loading anything', () => {
  it('refuses a model that is not a .gguf file, naming the field', async () => {
    const error = await createLlamaCppRollouts({
      model: '/models/smollm2',
      tokenizer: {} as Tokenizer,
      contextLength: 64,
      sequencesPerContext: 2,
      seed: 0,
    }).catch((e: unknown) => e);
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    expect((error as InvalidArgumentError).argument).toBe('model');
  });

  it('refuses a context length that is not a positive integer', async () => {
    const error = await createLlamaCppRollouts({
      model: 'm.gguf',
      tokenizer: {} as Tokenizer,
      contextLength: 0,
      sequencesPerContext: 2,
      seed: 0,
    }).catch((e: unknown) => e);
    expect((error as InvalidArgumentError).argument).toBe('contextLength');
  });
});

describe.skipIf(skipReason !== '')(`llama.cpp rollouts on SmolLM2-135M-Instruct ${skipReason}`, () => {
  let tokenizer: Tokenizer;
  let rollouts: LlamaCppRollouts;
  let prompt: number[];
  const chat = (text: string) => `<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`;

  beforeAll(async () => {
    const gguf = readGguf(readFileSync(path), path);
    const files = ggufTokenizerFiles(gguf);
    tokenizer = createHfTokenizer(files.tokenizerJson, files.tokenizerConfig, {
      vocabSize: 49_152,
      eosTokenId: 2,
    });
    rollouts = await createLlamaCppRollouts({
      model: path,
      tokenizer,
      contextLength: 256,
      sequencesPerContext: 3,
      threads: 1,
      seed: 5,
    });
    prompt = tokenizer.encode(chat('What is the capital of France?'));
  }, 120_000);
  afterAll(async () => rollouts?.dispose());

  it('answers greedily, and its log-probs are near the training engine’s (Q4_1 against float32)', async () => {
    const session = await rollouts.begin([prompt]);
    const [greedy] = await session.generateTurn([0], greedyTurn(12));
    await session.end();
    expect(tokenizer.decode(greedy!.steps.map((s) => s.tokenId))).toContain('Paris');
    expect(greedy!.finishReason).toBe('eos');
    greedy!.steps.forEach((s, k) => expect(s.position).toBe(prompt.length + k));
    const policy = await createLlamaPolicy({ model: path, finetune: 'none' });
    try {
      const [scored] = await policy.logProbs({
        inputIds: [[...prompt, ...greedy!.steps.map((s) => s.tokenId)]],
        positions: [greedy!.steps.map((s) => s.position)],
      });
      const diffs = greedy!.steps.map((s, k) => Math.abs(s.logProb - scored![k]!));
      expect(Math.max(...diffs)).toBeLessThan(0.1);
    } finally {
      await policy.dispose();
    }
  }, 300_000);

  it('keeps each rollout’s KV cache across turns: a second turn after an observation matches a fresh prefill', async () => {
    const observation = tokenizer.encode(`<|im_end|>\n${chat('And of Italy?')}`);
    const session = await rollouts.begin([prompt, prompt]);
    const [first] = await session.generateTurn([0], greedyTurn(4));
    await session.append(0, observation);
    const [second] = await session.generateTurn([0], greedyTurn(6));
    await session.end();
    const whole = [...prompt, ...first!.steps.map((s) => s.tokenId), ...observation];
    const fresh = await rollouts.begin([whole]);
    const [again] = await fresh.generateTurn([0], greedyTurn(6));
    await fresh.end();
    expect(second!.steps.map((s) => s.tokenId)).toEqual(again!.steps.map((s) => s.tokenId));
    second!.steps.forEach((s, k) => {
      expect(s.position).toBe(whole.length + k);
      expect(s.logProb).toBeCloseTo(again!.steps[k]!.logProb, 3);
    });
  }, 120_000);

  it('stops right after a stop string, and reproduces a sampled turn from the same seed', async () => {
    const session = await rollouts.begin([prompt]);
    const [stopped] = await session.generateTurn([0], {
      stopAfter: ['France'],
      maxTokens: 12,
      temperature: 0,
      topP: 1,
    });
    await session.end();
    expect(stopped!.finishReason).toBe('stop');
    expect(tokenizer.decode(stopped!.steps.map((s) => s.tokenId)).endsWith('France')).toBe(true);

    const sample = async (seed: number, topP: number) => {
      const seeded = await createLlamaCppRollouts({
        model: path,
        tokenizer,
        contextLength: 128,
        sequencesPerContext: 2,
        threads: 1,
        seed,
      });
      try {
        const s = await seeded.begin([prompt, prompt]);
        const out = await s.generateTurn([0, 1], { stopAfter: [], maxTokens: 8, temperature: 1, topP });
        await s.end();
        return out.map((o) => o.steps);
      } finally {
        await seeded.dispose();
      }
    };
    const [a, b] = [await sample(11, 1), await sample(11, 1)];
    expect(a.map((row) => row.map((s) => s.tokenId))).toEqual(b.map((row) => row.map((s) => s.tokenId)));
    for (const step of a.flat()) expect(step.logProb).toBeLessThanOrEqual(0);
    const nucleus = await sample(11, 0.5);
    for (const step of nucleus.flat()) expect(Number.isFinite(step.logProb)).toBe(true);
  }, 120_000);

  it('decodes many rows in shared batches without mixing their logits: identical prompts, identical greedy turns', async () => {
    // Without the serialised sampling, node-llama-cpp 3.21.1 gave 4 of 16 such rows another continuation.
    const many = await createLlamaCppRollouts({
      model: path,
      tokenizer,
      contextLength: 128,
      sequencesPerContext: 12,
      threads: 1,
      seed: 0,
    });
    try {
      const session = await many.begin(Array.from({ length: 12 }, () => prompt));
      const out = await session.generateTurn(
        Array.from({ length: 12 }, (_, i) => i),
        greedyTurn(16),
      );
      await session.end();
      for (const o of out) {
        expect(o.steps.map((s) => s.tokenId)).toEqual(out[0]!.steps.map((s) => s.tokenId));
        o.steps.forEach((s, k) => expect(s.logProb).toBeCloseTo(out[0]!.steps[k]!.logProb, 4));
      }
    } finally {
      await many.dispose();
    }
  }, 120_000);

  it('refuses a prompt that leaves no room to answer and a rollout it does not hold', async () => {
    const long = await rollouts.begin([new Array(256).fill(prompt[0]!)]).catch((e: unknown) => e);
    expect((long as InvalidArgumentError).argument).toBe('promptTokenIds[0]');
    const session = await rollouts.begin([prompt]);
    const missing = await session.generateTurn([1], greedyTurn(2)).catch((e: unknown) => e);
    expect((missing as InvalidArgumentError).argument).toBe('rolloutIds');
    await session.end();
  }, 60_000);
});
