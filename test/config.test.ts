import { describe, expect, it } from 'vitest';
import { ConfigValidationError, parseSearcherConfig } from '../src/index';
import { rewardSettingsOf } from '../src/config';
import { resolveRewardWeights } from '../src/core/reward/combine';

describe('parseSearcherConfig', () => {
  it('fills the defaults of seed 000', () => {
    const config = parseSearcherConfig({});
    expect(config.episode.maxTurns).toBe(7);
    expect(config.rl.loss).toEqual({
      kind: 'gspo',
      clipLow: 3e-4,
      clipHigh: 4e-4,
      aggregation: 'seq-mean-token-mean',
      klCoef: 0,
      klEstimator: 'k3',
    });
    expect(config.reward.weights).toBe('default');
  });

  it.each([
    [{ rl: { loss: { clipLow: -1 } } }, 'rl.loss.clipLow'],
    [{ episode: { maxTurns: 0 } }, 'episode.maxTurns'],
    [{ episode: { maxTruns: 7 } }, 'episode.maxTruns'],
    [{ reward: { weights: 'phase9' } }, 'reward.weights'],
    [{ adapters: { store: { type: 'jsonl' } } }, 'adapters.store.dir'],
    [{ rl: { nAgent: 2.5 } }, 'rl.nAgent'],
    // The Search-R1 reward scores the policy's own answer: with the default searcher mode it would score the Generator's.
    [{ reward: { scheme: 'search-r1' } }, 'reward.scheme'],
    [{ reward: { searchR1Reward: 'exact-match' } }, 'reward.searchR1Reward'],
    [
      { episode: { mode: 'answer' }, reward: { scheme: 'search-r1', searchR1Reward: 'em' } },
      'reward.searchR1Reward',
    ],
    [{ rl: { loss: { dualClip: true } } }, 'rl.loss.dualClip'],
    [{ rl: { loss: { kind: 'ppo_clip', dualClip: true, clipRatioC: 1 } } }, 'rl.loss.clipRatioC'],
    [{ rl: { loss: { klEstimator: 'k4' } } }, 'rl.loss.klEstimator'],
  ])('names the field of %j', (input, field) => {
    try {
      parseSearcherConfig(input);
      expect.unreachable();
    } catch (error) {
      expect(ConfigValidationError.isInstance(error)).toBe(true);
      expect((error as ConfigValidationError).field).toBe(field);
      expect((error as Error).message).toContain(field);
    }
  });
});

describe('rewardSettingsOf', () => {
  it('carries every field of the reward section, the weights resolved from a preset', () => {
    const config = parseSearcherConfig({
      episode: { mode: 'answer' },
      reward: { scheme: 'search-r1', searchR1Reward: 'exact-match', weights: 'phase1', ndcgK: 5 },
    });
    const settings = rewardSettingsOf(config.reward);
    expect(settings).toEqual({
      scheme: 'search-r1',
      searchR1Reward: 'exact-match',
      weights: resolveRewardWeights('phase1'),
      ndcgK: 5,
      ndcgIdeal: 'cutoff',
    });
    // A field added to the section reaches the scorer without another edit here.
    expect(Object.keys(settings).sort()).toEqual(Object.keys(config.reward).sort());
  });
});
