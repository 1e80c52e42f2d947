import type { LossSettings } from '../update-batch';

/** PPO-clip at 0.2 each side, token-mean, no KL term: the loss settings the update tests start from. */
export const ppoClipLoss = (overrides: Partial<LossSettings> = {}): LossSettings => ({
  kind: 'ppo_clip',
  clipLow: 0.2,
  clipHigh: 0.2,
  aggregation: 'token-mean',
  klCoef: 0,
  klEstimator: 'k3',
  ...overrides,
});
