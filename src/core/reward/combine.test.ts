import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors';
import { combineReward, phase1Reward, REWARD_PRESETS, resolveRewardWeights, rewardValue } from './combine';

describe('combineReward', () => {
  it('is 0 when the format gate fails, whatever the scores', () => {
    expect(combineReward({ formatPassed: false, judgeScore: 1, ndcg: 1 })).toMatchObject({
      status: 'ok',
      value: 0,
    });
  });
  it('weights judge, NDCG and format (defaults 0.8 / 0.2 / 0)', () => {
    const outcome = combineReward({ formatPassed: true, judgeScore: 0.5, ndcg: 0.25 });
    expect(outcome.status === 'ok' && outcome.value).toBeCloseTo(0.8 * 0.5 + 0.2 * 0.25, 15);
    const unified = combineReward({ formatPassed: true, judgeScore: 1, ndcg: 0.5 }, REWARD_PRESETS.unified);
    expect(unified.status === 'ok' && unified.value).toBeCloseTo(0.4 + 0.25 + 0.1, 15);
  });
  it('is missing, not 0, when a judge weight is set and no score exists', () => {
    const outcome = combineReward({ formatPassed: true, judgeScore: null, ndcg: 1 });
    expect(outcome.status).toBe('missing');
    expect(rewardValue(outcome)).toBeNull();
  });
  it('phase 1 is 0.1 + 0.9 NDCG when the format passes, else 0', () => {
    expect(phase1Reward(true, 0.5)).toBeCloseTo(0.55, 15);
    expect(phase1Reward(false, 1)).toBe(0);
  });
  it('rejects scores outside [0, 1] naming the field', () => {
    expect(() => combineReward({ formatPassed: true, judgeScore: 1.5, ndcg: 0 })).toThrow(
      /components\.judgeScore/,
    );
    expect(() =>
      combineReward(
        { formatPassed: true, judgeScore: 1, ndcg: 0 },
        { judge: Number.NaN, ndcg: 0, format: 0 },
      ),
    ).toThrow(/weights\.judge/);
  });
});

describe('resolveRewardWeights', () => {
  it("gives a copy of a preset's weights by name, and explicit weights as given", () => {
    for (const name of Object.keys(REWARD_PRESETS) as Array<keyof typeof REWARD_PRESETS>) {
      const resolved = resolveRewardWeights(name);
      expect(resolved).toEqual(REWARD_PRESETS[name]);
      expect(resolved).not.toBe(REWARD_PRESETS[name]);
      resolved.judge = 42;
      expect(REWARD_PRESETS[name].judge).not.toBe(42);
    }
    const explicit = { judge: 0.3, ndcg: 0.6, format: 0.1 };
    expect(resolveRewardWeights(explicit)).toBe(explicit);
  });
  it('refuses an unknown preset with an InvalidArgumentError on reward.weights listing the presets', () => {
    const call = () => resolveRewardWeights('phase2' as keyof typeof REWARD_PRESETS);
    expect(call).toThrow(InvalidArgumentError);
    expect(call).toThrow(/reward\.weights.*phase1, focused, unified, default/);
    expect(() => resolveRewardWeights('toString' as keyof typeof REWARD_PRESETS)).toThrow(
      InvalidArgumentError,
    );
  });
});
