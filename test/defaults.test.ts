import { describe, expect, it } from 'vitest';
import { ruleJudgeSettingsSchema, DEFAULT_PARTIAL_THRESHOLD } from '../src/adapters/rule-judge/settings';
import { MOCK_FALLBACK_ANSWER, mockGeneratorConfigSchema } from '../src/adapters/mock/settings';
import { SCRIPTED_LOG_PROB, scriptedPolicyConfigSchema } from '../src/adapters/scripted-policy/settings';
import { parseSearcherConfig } from '../src/config';
import { DEFAULT_CALL_POLICIES, PORT_NAMES } from '../src/core/calls/call-policy';
import { DEFAULT_EPISODE_CONFIG } from '../src/core/episode/config';
import {
  DEFAULT_PIPELINE_DEADLINES,
  DEFAULT_PIPELINE_LIMITS,
  DEFAULT_PIPELINE_MODE,
} from '../src/core/pipeline/types';
import { DEFAULT_REWARD_CONFIG } from '../src/core/reward/score';
import { DEFAULT_RL_SETTINGS } from '../src/core/rl/settings';

// Each default is written once, as a core constant; the configuration schema is built from them.
describe('defaults', () => {
  const config = parseSearcherConfig({});

  it('an empty configuration is exactly the core constants', () => {
    expect(config.episode).toEqual(DEFAULT_EPISODE_CONFIG);
    expect(config.rl).toEqual(DEFAULT_RL_SETTINGS);
    expect(config.reward).toEqual(DEFAULT_REWARD_CONFIG);
    expect(config.pipeline).toEqual({
      mode: DEFAULT_PIPELINE_MODE,
      limits: DEFAULT_PIPELINE_LIMITS,
      deadlines: DEFAULT_PIPELINE_DEADLINES,
    });
    for (const port of PORT_NAMES) {
      const { maxConcurrent, timeoutMs, maxRetries, requestsPerMinute, tokensPerMinute } =
        DEFAULT_CALL_POLICIES[port];
      expect(config.calls[port], port).toEqual({
        maxConcurrent,
        timeoutMs,
        maxRetries,
        requestsPerMinute,
        tokensPerMinute,
      });
    }
  });

  it('a partly given section keeps the core defaults for the rest', () => {
    const partial = parseSearcherConfig({
      rl: { loss: { kind: 'ppo_clip' } },
      calls: { judge: { maxRetries: 5 } },
    });
    expect(partial.rl.loss).toEqual({ ...DEFAULT_RL_SETTINGS.loss, kind: 'ppo_clip' });
    expect(partial.rl.advantage).toEqual(DEFAULT_RL_SETTINGS.advantage);
    expect(partial.calls.judge.timeoutMs).toBe(DEFAULT_CALL_POLICIES.judge.timeoutMs);
    expect(partial.calls.judge.maxRetries).toBe(5);
  });

  it("adapters' configuration defaults are their factories' defaults", () => {
    expect(ruleJudgeSettingsSchema.parse({}).partialThreshold).toBe(DEFAULT_PARTIAL_THRESHOLD);
    expect(mockGeneratorConfigSchema.parse({}).fallback).toBe(MOCK_FALLBACK_ANSWER);
    expect(scriptedPolicyConfigSchema.parse({ script: ['x'] }).logProb).toBe(SCRIPTED_LOG_PROB);
    expect(config.adapters.judge).toEqual({ type: 'rule', partialThreshold: DEFAULT_PARTIAL_THRESHOLD });
  });
});
