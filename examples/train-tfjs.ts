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
import { createRuleJudge } from 'searcher-rl/rule-judge';
import { createScriptedPolicy } from 'searcher-rl/scripted-policy';
import { createTfjsPolicy } from 'searcher-rl/tfjs';

// Pages, questions with references and golden pages, and a frozen generator that reads the pages.
const facts: Record<string, string> = {
  'acme.png': '4.5 billion dollars',
  'globex.png': '7 billion dollars',
};
const searchEngine = createMockSearchEngine({
  pages: Object.entries(facts).map(([basename, fact]) => ({
    basename,
    text: `${basename.split('.')[0]} revenue ${fact}`,
  })),
});
const prompts = Object.entries(facts).map(([basename, reference]) => ({
  uid: basename,
  question: `${basename.split('.')[0]} revenue?`,
  reference,
  goldenBasenames: [basename],
}));
const episode = {
  instructions: '',
  maxTurns: 2,
  maxTurnTokens: 24,
  observationMaxChars: 40,
  temperature: 0.5,
};

// A small trainable Searcher; its context (128 tokens) is the episodes' context.
const policy = await createTfjsPolicy({
  model: { layers: 2, width: 32, heads: 4, contextLength: 128 },
  seed: 1,
  optimizer: { learningRate: 3e-3 },
});
// Warm start: SFT on demonstrations of the format from a scripted policy (searching either company).
const demonstrator = createScriptedPolicy({
  contextLength: policy.contextLength,
  script: ({ turn, rolloutId }) =>
    turn === 0
      ? `<search>${rolloutId % 2 ? 'globex' : 'acme'} revenue</search>`
      : '<search_complete>true</search_complete>',
});
const demonstrations = await runEpisodes(
  expandGroups(prompts, 4),
  { policy: demonstrator, searchEngine },
  { config: episode },
);
await runSft(
  policy,
  sftExamples(demonstrations.map((d) => d.trajectory)),
  { epochs: 150, batchSize: 8 },
  { random: createRandom(1) },
);

// GRPO with the GSPO loss, rewarded by the judge (0.8) and NDCG (0.2).
policy.resetOptimizer({ learningRate: 1e-3 });
const searcher = createSearcher(
  { policy, searchEngine, generator: createMockGenerator({ facts }), judge: createRuleJudge() },
  { episode, rl: { nAgent: 4 } },
);
const trainer = createTrainer({
  searcher,
  store: createMemoryStore(),
  prompts,
  settings: { runId: 'tfjs-recipe', steps: Number(process.env.STEPS ?? 20), batchSize: 2 },
});
await trainer.run({
  onStep: (m) =>
    console.log(
      `step ${m.step}: reward ${m.rewardMean?.toFixed(3)}, success ${m.successRate?.toFixed(2) ?? '-'}, completion ${m.completionRate.toFixed(2)}, updates applied ${m.updatesApplied}`,
    ),
});
policy.dispose();
