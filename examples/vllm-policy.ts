// Rollouts of a model served by vLLM (`vllm serve <model>`), with the trajectories' token ids and
// log-probs as the server sampled them: `npx tsx examples/vllm-policy.ts`
import { createProtocolTokenizer, runEpisodes } from 'searcher-rl';
import { createMockSearchEngine } from 'searcher-rl/mock';
import { createOpenAICompatiblePolicy } from 'searcher-rl/openai-compatible';

// Token ids must be the served model's: pass that model's tokenizer. The protocol tokenizer here
// only fits a model trained with it (such as searcher-rl's own small policies).
const policy = createOpenAICompatiblePolicy({
  baseURL: process.env.VLLM_URL ?? 'http://127.0.0.1:8000/v1',
  model: process.env.VLLM_MODEL ?? 'searcher',
  tokenizer: createProtocolTokenizer(),
  reliability: { timeoutMs: 120_000, maxRetries: 2, maxConcurrent: 64 },
});
const searchEngine = createMockSearchEngine({
  pages: [{ basename: 'acme_2.png', text: 'Acme revenue 2019: 4.5 billion dollars' }],
});
const episodes = await runEpisodes(
  Array.from({ length: 4 }, (_, rolloutIndex) => ({
    prompt: { uid: 'q', question: 'Acme revenue 2019?' },
    groupId: 'g',
    rolloutIndex,
  })),
  { policy, searchEngine },
  { config: { temperature: 1, maxTurns: 4 } },
);
for (const { trajectory: t } of episodes)
  console.log(
    t.sampleId,
    t.terminated,
    t.tokenSteps.length,
    'policy tokens, mean log-prob',
    (t.tokenSteps.reduce((s, x) => s + x.logProb, 0) / Math.max(1, t.tokenSteps.length)).toFixed(3),
  );
