import { InvalidArgumentError } from '../errors';
import { mean } from '../stats';

/** Options of `groupAdvantages`. */
export interface GroupAdvantageOptions {
  /** `population` divides by sqrt(mean((r-mu)^2)) (docs/method.md#advantages); `unbiased` uses the n-1 estimate. */
  std?: 'population' | 'unbiased';
  /** Added to the std before dividing. Default 1e-8 for population, 1e-6 for unbiased. */
  eps?: number;
  /** `false` gives r - mean (Dr. GRPO style), no division. Default true. */
  normalize?: boolean;
}

/** A reward that could not be computed is `null` (or NaN): it is left out of the statistics and gets advantage 0. */
export type MaybeReward = number | null;

export function isMissingReward(reward: MaybeReward | undefined): boolean {
  return reward === null || reward === undefined || Number.isNaN(reward);
}

/**
 * GRPO advantages of one group (the n_agent rollouts of one prompt instance):
 * A_i = (r_i - mean) / (std + eps). Missing rewards are excluded from mean and std and get 0;
 * a group with fewer than two valid rewards gets all zeros (nothing to compare against).
 */
export function groupAdvantages(
  rewards: readonly MaybeReward[],
  options: GroupAdvantageOptions = {},
): number[] {
  if (!Array.isArray(rewards))
    throw new InvalidArgumentError({
      argument: 'rewards',
      message: 'expected an array of rewards (number | null)',
    });
  const std = options.std ?? 'population';
  if (std !== 'population' && std !== 'unbiased') {
    throw new InvalidArgumentError({
      argument: 'std',
      message: `must be 'population' or 'unbiased', got ${String(std)}`,
    });
  }
  const eps = options.eps ?? (std === 'population' ? 1e-8 : 1e-6);
  if (!(Number.isFinite(eps) && eps >= 0))
    throw new InvalidArgumentError({ argument: 'eps', message: `must be a finite number >= 0, got ${eps}` });
  const normalize = options.normalize ?? true;

  const valid: number[] = [];
  rewards.forEach((r, i) => {
    if (isMissingReward(r)) return;
    if (typeof r !== 'number' || !Number.isFinite(r)) {
      throw new InvalidArgumentError({
        argument: `rewards[${i}]`,
        message: `must be a finite number, null or NaN (missing), got ${String(r)}`,
      });
    }
    valid.push(r);
  });
  if (valid.length < 2) return rewards.map(() => 0);
  // A tied group carries no signal; computing it would leave rounding noise of order 1/eps.
  if (valid.every((r) => r === valid[0])) return rewards.map(() => 0);

  const average = mean(valid);
  let scale = 1;
  if (normalize) {
    const squared = valid.reduce((sum, r) => sum + (r - average) * (r - average), 0);
    const variance = squared / (std === 'population' ? valid.length : valid.length - 1);
    scale = Math.sqrt(variance) + eps;
  }
  return rewards.map((r) => (isMissingReward(r) ? 0 : ((r as number) - average) / scale));
}
