// A pretrained causal LM exported to ONNX (Hugging Face Optimum's layout) as the Searcher, run by
// ONNX Runtime on the CPU: rollouts and evaluation only (it does not train). The model folder here
// is the tiny test fixture (a GPT-2 exported by Optimum: scripts/make-onnx-fixture.py); point MODEL_DIR
// at your own export.
import { join } from 'node:path';
import { createSearcher } from 'searcher-rl';
import { createMockGenerator, createMockSearchEngine } from 'searcher-rl/mock';
import { createOnnxPolicy } from 'searcher-rl/onnx';
import { createRuleJudge } from 'searcher-rl/rule-judge';

const modelDir =
  process.env.MODEL_DIR ??
  join(import.meta.dirname, '..', 'src', 'adapters', 'onnx', '__fixtures__', 'tiny-gpt');
const policy = await createOnnxPolicy({ modelDir, executionProvider: 'cpu', intraOpThreads: 1, seed: 1 });
console.log(
  `policy: ${policy.provider} on ${policy.executionProvider}, ${policy.modelConfig.layers} layers, vocabulary ${policy.modelConfig.vocabSize}, context ${policy.contextLength}`,
);

const facts: Record<string, string> = { 'apple_1.png': '7', 'moon_2.png': '42', 'river_3.png': '15' };
const pages = Object.entries(facts).map(([basename, value]) => {
  const [subject] = basename.split('_');
  const aspect = { apple: 'size', moon: 'price', river: 'age' }[subject!]!;
  return {
    basename,
    text: `the ${subject} ${aspect} is ${value}`,
    question: `what is the ${aspect} of the ${subject}?`,
  };
});
const searcher = createSearcher(
  {
    policy,
    searchEngine: createMockSearchEngine({ pages }),
    generator: createMockGenerator({ facts }),
    judge: createRuleJudge(),
  },
  { episode: { instructions: '', maxTurns: 2, maxTurnTokens: 32, temperature: 0.3 }, rl: { nAgent: 2 } },
);
const prompts = pages.map((p) => ({
  uid: p.basename,
  question: p.question,
  reference: facts[p.basename]!,
  goldenBasenames: [p.basename],
}));
const batch = await searcher.collect(prompts);
for (const { trajectory: t } of batch.episodes) {
  const logProb = t.tokenSteps.reduce((sum, s) => sum + s.logProb, 0);
  console.log(
    `${t.sampleId}: ${t.turns.length} turns, retrieved [${t.retrievedBasenames.join(', ')}], answer ${JSON.stringify(t.finalAnswer)}, reward ${t.reward?.toFixed(3)}, ${t.tokenSteps.length} policy tokens, log-prob ${logProb.toFixed(2)}`,
  );
}
const rewards = batch.episodes.map((e) => e.trajectory.reward ?? 0);
console.log(
  `episodes ${rewards.length}, mean reward ${(rewards.reduce((a, b) => a + b, 0) / rewards.length).toFixed(3)}`,
);
await policy.dispose();
