// Train a small TensorFlow.js Searcher on a toy task: the prompt names a keyword, the policy must
// search for exactly it and then finish. SFT on demonstrations of the format (searching a random
// keyword), then GRPO with the GSPO loss and the phase-1 reward (0.1 + 0.9 * NDCG).
// src/run/trainer.e2e.test.ts runs the same recipe and requires the reward to rise from below 0.3 to above 0.75 (this example runs on until 0.9).
// Run: npx tsx examples/train-toy.ts   (about two minutes on 2 cores with the wasm backend)
import {
  createRandom,
  createSearcher,
  createTrainer,
  expandGroups,
  runEpisodes,
  runSft,
  sftExamples,
} from 'searcher-rl';
import { createMemoryStore, createMockGenerator, createMockSearchEngine } from 'searcher-rl/mock';
import { createScriptedPolicy } from 'searcher-rl/scripted-policy';
import { createTfjsPolicy } from 'searcher-rl/tfjs';

const keywords = ['apple', 'river', 'cloud', 'stone', 'tiger'];
const searchEngine = createMockSearchEngine({
  pages: keywords.map((k) => ({ basename: `${k}.png`, text: `${k} facts` })),
});
const prompts = keywords.map((k) => ({ uid: k, question: k, goldenBasenames: [`${k}.png`] }));
const episode = {
  maxTurns: 2,
  maxTurnTokens: 10,
  maxContextTokens: 96,
  observationMaxChars: 12,
  instructions: '',
  temperature: 0.7,
};

const policy = await createTfjsPolicy({
  model: { layers: 2, width: 32, heads: 4, contextLength: 96 },
  seed: 7,
  optimizer: { learningRate: 3e-3, weightDecay: 0 },
});
console.log(`backend ${policy.backend.name}, ${policy.parameterCount} parameters`);

// Demonstrations of the format, not of the answer: per prompt, one search of every keyword, then as
// many random ones, from a scripted policy (tokenized exactly as the environment does).
const pick = createRandom(11);
const seen = new Map<string, number>();
const script = createScriptedPolicy({
  script: ({ turn, context }) => {
    if (turn > 0) return '<search_complete>true</search_complete>';
    const n = seen.get(context) ?? 0;
    seen.set(context, n + 1);
    return `<search>${n < keywords.length ? keywords[n] : keywords[pick.nextInt(keywords.length)]}</search>`;
  },
});
const demonstrations = await runEpisodes(
  expandGroups(prompts, 2 * keywords.length),
  { policy: script, searchEngine },
  { config: episode },
);
const sft = await runSft(
  policy,
  sftExamples(demonstrations.map((d) => d.trajectory)),
  { epochs: 30, batchSize: 8 },
  { random: createRandom(5) },
);
console.log(`SFT loss ${sft.epochLoss[0]!.toFixed(3)} -> ${sft.epochLoss.at(-1)!.toFixed(3)}`);

policy.resetOptimizer({ learningRate: 1e-3, warmupSteps: 10 });
const searcher = createSearcher(
  { policy, searchEngine, generator: createMockGenerator() },
  { episode, reward: { weights: 'phase1' }, rl: { nAgent: 8 }, pipeline: { limits: { rollout: 8 } } },
);
const trainer = createTrainer({
  searcher,
  store: createMemoryStore(),
  prompts,
  settings: { runId: 'toy', steps: Number(process.env.STEPS ?? 250), batchSize: keywords.length, seed: 3 },
});
const rewards: number[] = [];
await trainer.run({
  onStep: (m) => {
    rewards.push(m.rewardMean ?? 0);
    const recent = rewards.slice(-5);
    if (
      recent.length === 5 &&
      recent.reduce((a, b) => a + b, 0) / 5 > 0.9 &&
      !rewards
        .slice(0, -1)
        .some((_, i) => i >= 4 && rewards.slice(i - 4, i + 1).reduce((a, b) => a + b, 0) / 5 > 0.9)
    ) {
      console.log(`step ${m.step}: the mean reward of the last 5 steps passed 0.9`);
    }
    if (m.step % 25 === 1 || m.step === 250)
      console.log(
        `step ${m.step}: reward ${m.rewardMean?.toFixed(3) ?? 'missing'}, NDCG ${m.ndcgMean.toFixed(2)}, completion ${m.completionRate.toFixed(2)}, ${m.rolloutTokensPerSecond.toFixed(0)} rollout tok/s`,
      );
  },
});
policy.dispose();
