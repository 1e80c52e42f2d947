import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { greedyTurn, SMOLLM2_GGUF } from '../../../test/support/smollm2';
import { createLlamaGenerator } from './generator';
import { createLlamaPolicy, type LlamaPolicy } from './policy';

// SmolLM2-135M-Instruct itself (scripts/fetch-models.sh; skipped without it): the GGUF loads with
// its tokenizer and chat template, answers a question greedily, and its sampled log-probs are the
// ones logProbs gives. Its exactness against transformers is python/tests/test_llama_engine.py.

const path = SMOLLM2_GGUF;
const present = existsSync(path);

describe.skipIf(!present)(`SmolLM2-135M-Instruct (${path}; run scripts/fetch-models.sh to get it)`, () => {
  let policy: LlamaPolicy;
  afterAll(async () => policy?.dispose());

  it('answers in its chat template, and a rollout scores as logProbs scores it', async () => {
    policy = await createLlamaPolicy({ model: path, finetune: 'none', seed: 3 });
    expect(policy.modelConfig).toMatchObject({
      layers: 30,
      hiddenSize: 576,
      heads: 9,
      kvHeads: 3,
      vocabSize: 49152,
    });
    const prompt = policy.tokenizer.encode(policy.chatFormat!.prompt('What is the capital of France?'));
    expect(policy.tokenizer.decode(prompt)).toContain('<|im_start|>assistant\n');
    const session = await policy.begin([prompt]);
    const [greedy] = await session.generateTurn([0], greedyTurn(12));
    await session.end();
    const text = policy.tokenizer.decode(greedy!.steps.map((s) => s.tokenId));
    expect(text).toContain('Paris');
    const ids = [...prompt, ...greedy!.steps.map((s) => s.tokenId)];
    const [scored] = await policy.logProbs({
      inputIds: [ids],
      positions: [greedy!.steps.map((s) => s.position)],
    });
    greedy!.steps.forEach((s, k) => expect(scored![k]).toBeCloseTo(s.logProb, 3));
  }, 120_000);
});

// The Generator (createLlamaGenerator) on the same model.
describe.skipIf(!present)(`SmolLM2 as the Generator (${path}; scripts/fetch-models.sh)`, () => {
  it('reads the answer off the evidence', async () => {
    const generator = await createLlamaGenerator({ model: path });
    try {
      const { answer } = await generator.doAnswer('Who founded the Globex Corporation?', [
        {
          kind: 'page',
          basename: 'globex.png',
          text: 'The Globex Corporation was founded in 1989 by Hank Scorpio in Cypress Creek.',
        },
      ]);
      expect(answer).toMatch(/Hank Scorpio/);
    } finally {
      await generator.dispose();
    }
  }, 120_000);
});
