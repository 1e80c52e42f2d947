import { afterAll, describe, expect, it } from 'vitest';
import {
  createToyPolicies,
  formatDemonstrations,
  KEYWORDS,
  prompts,
  toySearcher,
} from '../../test/support/toy-task';
import { createMemoryStore } from '../adapters/mock/index';
import { createRandom } from '../core/random';
import { runSft } from '../core/rl/policy-update';
import { createTrainer } from './trainer';

// The trainer learns the toy task (test/support/toy-task.ts) with GRPO: a run of up to 300 steps,
// in npm run test:e2e. Its unit tests (resume, refusals, step metrics) are src/run/trainer.test.ts.
const { tinyPolicy, dispose } = createToyPolicies();
afterAll(dispose);

describe('createTrainer', () => {
  it('GRPO raises the toy task reward from below 0.3 to above 0.75 (seeded)', async () => {
    // SFT on demonstrations of the format that search a random keyword, then GRPO (GSPO loss).
    const policy = await tinyPolicy(7, { width: 32, layers: 2, heads: 4, learningRate: 3e-3 });
    const sft = await runSft(
      policy,
      await formatDemonstrations(KEYWORDS, prompts),
      { epochs: 30, batchSize: 8 },
      { random: createRandom(5) },
    );
    expect(sft.epochLoss[sft.epochLoss.length - 1]).toBeLessThan(sft.epochLoss[0]! / 10);
    policy.resetOptimizer({ learningRate: 1e-3, warmupSteps: 10 });
    const searcher = toySearcher(policy, { rl: { nAgent: 8 }, temperature: 0.7 });
    const trainer = createTrainer({
      searcher,
      store: createMemoryStore(),
      prompts,
      settings: { runId: 'grpo', steps: 300, batchSize: 5, saveFreq: 1000, seed: 3 },
    });
    const rewards: number[] = [];
    const controller = new AbortController();
    let reachedAt = -1;
    await trainer
      .run({
        signal: controller.signal,
        onStep: (m) => {
          rewards.push(m.rewardMean ?? 0);
          // Done once the mean reward of the last 5 steps (200 rollouts) is above 0.75: four of the
          // five keywords found. The fifth is found on some seeds and float roundings and not on
          // others (at temperature 0.7 a keyword the policy has given to another prompt is rarely
          // sampled again), so the test does not ask for it.
          const recent = rewards.slice(-5);
          if (recent.length === 5 && recent.reduce((a, b) => a + b, 0) / 5 > 0.75) {
            reachedAt = m.step;
            controller.abort();
          }
        },
      })
      .catch((error: unknown) => {
        if (!controller.signal.aborted) throw error;
      });
    const firstFive = rewards.slice(0, 5).reduce((a, b) => a + b, 0) / 5;
    expect(firstFive).toBeLessThan(0.3);
    expect(
      reachedAt,
      `mean reward of the last 5 steps stayed at or below 0.75 for 300 steps (last: ${rewards.slice(-5).join(', ')})`,
    ).toBeGreaterThan(0);
  }, 600_000);
});
