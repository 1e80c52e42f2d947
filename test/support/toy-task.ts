import { createMockGenerator, createMockSearchEngine } from '../../src/adapters/mock/index';
import { createScriptedPolicy } from '../../src/adapters/scripted-policy/index';
import { createTfjsPolicy, type TfjsPolicy } from '../../src/adapters/tfjs/policy';
import { runEpisodes } from '../../src/core/episode/run-episodes';
import { createRandom } from '../../src/core/random';
import { expandGroups } from '../../src/core/rl/groups';
import { sftExamples } from '../../src/core/rl/policy-update';
import { createSearcher } from '../../src/searcher';

// The trainer's toy task, shared by src/run/trainer.test.ts (resume, refusals, metrics) and
// src/run/trainer.e2e.test.ts (GRPO learns it: a 300-step run, in npm run test:e2e).

/**
 * The toy task: the prompt names a keyword; the policy must search for exactly it and then finish.
 * The reward is phase 1's (docs/method.md#reward-presets): 0.1 + 0.9 * NDCG of the keyword's page if the policy itself
 * completed (the format gate), else 0.
 */
export const KEYWORDS = ['apple', 'river', 'cloud', 'stone', 'tiger'];
export const pages = KEYWORDS.map((k) => ({ basename: `${k}.png`, text: `${k} facts` }));
export const prompts = KEYWORDS.map((k) => ({
  uid: k,
  question: k,
  goldenBasenames: [`${k}.png`],
  reference: k,
}));
export const episode = {
  maxTurns: 2,
  maxTurnTokens: 10,
  maxContextTokens: 96,
  observationMaxChars: 12,
  instructions: '',
};

/** Tiny seeded tfjs policies for the toy task; `dispose` frees every one made (call it in afterAll). */
export function createToyPolicies() {
  const policies: TfjsPolicy[] = [];
  async function tinyPolicy(
    seed: number,
    overrides: { learningRate?: number; width?: number; layers?: number; heads?: number } = {},
  ): Promise<TfjsPolicy> {
    const policy = await createTfjsPolicy({
      model: {
        layers: overrides.layers ?? 1,
        width: overrides.width ?? 16,
        heads: overrides.heads ?? 2,
        contextLength: 96,
      },
      seed,
      backend: 'wasm',
      optimizer: { learningRate: overrides.learningRate ?? 1e-3, weightDecay: 0 },
    });
    policies.push(policy);
    return policy;
  }
  const dispose = () => {
    for (const p of policies) p.dispose();
  };
  return { policies, tinyPolicy, dispose };
}

/** The Searcher of the toy task: mock search over the keyword pages, phase 1's reward. */
export function toySearcher(
  policy: TfjsPolicy,
  options: { rl?: Record<string, unknown>; temperature?: number } = {},
) {
  return createSearcher(
    {
      policy,
      searchEngine: createMockSearchEngine({ pages }),
      generator: createMockGenerator({ facts: {} }),
    },
    // Seed 000's phase-1 reward: 0.1 + 0.9 * NDCG when the format passes, else 0.
    {
      episode: { ...episode, temperature: options.temperature ?? 1 },
      reward: { weights: 'phase1' },
      rl: { nAgent: 4, ...options.rl },
      pipeline: { limits: { rollout: 8 } },
    },
  );
}

/**
 * Demonstrations of the format, not of the answer: for each prompt, one search of every keyword,
 * then as many of random keywords. They give every keyword some probability under every prompt
 * (GRPO can only reinforce what it samples) without telling which one is right.
 */
export async function formatDemonstrations(keywords: readonly string[], data: typeof prompts) {
  const random = createRandom(11);
  const seen = new Map<string, number>();
  const script = createScriptedPolicy({
    script: ({ turn, context }) => {
      if (turn > 0) return '<search_complete>true</search_complete>';
      const n = seen.get(context) ?? 0;
      seen.set(context, n + 1);
      return `<search>${n < keywords.length ? keywords[n] : keywords[random.nextInt(keywords.length)]}</search>`;
    },
  });
  const demos = await runEpisodes(
    expandGroups(data, 2 * keywords.length),
    { policy: script, searchEngine: createMockSearchEngine({ pages }) },
    { config: episode },
  );
  return sftExamples(demos.map((d) => d.trajectory));
}
