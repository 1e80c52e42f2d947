import { InvalidArgumentError } from '../errors';
import { mean } from '../stats';

/** One way of `ADVANTAGE_STD_ESTIMATORS` to estimate a group's reward spread for GRPO's division. */
export interface AdvantageStdEstimator {
  /** What the estimate is, in one line, with its source. */
  readonly summary: string;
  /** Subtracted from the group's valid rewards to divide the squared deviations by (0: population, 1: Bessel's correction). */
  readonly degreesOfFreedomLost: number;
  /** Added to the std before dividing when the options give no `eps`. */
  readonly defaultEps: number;
}

/**
 * The group-std estimators of GRPO's advantage by the name a configuration gives
 * (`rl.advantage.std`, docs/method.md#advantages). Adding one is one entry here; the config's
 * choices (`ADVANTAGE_STD_KINDS`) and `groupAdvantages` follow from it.
 */
export const ADVANTAGE_STD_ESTIMATORS = Object.freeze({
  population: {
    summary: 'sqrt(mean((r - mean)^2)), the population estimate (numpy.std), eps 1e-8',
    degreesOfFreedomLost: 0,
    defaultEps: 1e-8,
  },
  unbiased: {
    summary: "the n - 1 estimate (torch.std, verl's GRPO), eps 1e-6",
    degreesOfFreedomLost: 1,
    defaultEps: 1e-6,
  },
} satisfies Record<string, AdvantageStdEstimator>);

/** A group-std estimator's name: a key of `ADVANTAGE_STD_ESTIMATORS` (`population`, `unbiased`). */
export type AdvantageStd = keyof typeof ADVANTAGE_STD_ESTIMATORS;

/** The names of `ADVANTAGE_STD_ESTIMATORS`, in order, as a non-empty tuple (a config's enum). */
export const ADVANTAGE_STD_KINDS = Object.freeze(Object.keys(ADVANTAGE_STD_ESTIMATORS)) as readonly [
  AdvantageStd,
  ...AdvantageStd[],
];

/** Options of `groupAdvantages`. */
export interface GroupAdvantageOptions {
  /** The group-std estimator (`ADVANTAGE_STD_ESTIMATORS`); default `population`. */
  std?: AdvantageStd;
  /** Added to the std before dividing. Default: the estimator's (1e-8 population, 1e-6 unbiased). */
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
  if (typeof std !== 'string' || !Object.hasOwn(ADVANTAGE_STD_ESTIMATORS, std)) {
    throw new InvalidArgumentError({
      argument: 'std',
      message: `must be one of ${ADVANTAGE_STD_KINDS.map((k) => `'${k}'`).join(', ')}, got ${String(std)}`,
    });
  }
  const estimator: AdvantageStdEstimator = ADVANTAGE_STD_ESTIMATORS[std];
  const eps = options.eps ?? estimator.defaultEps;
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
    const variance = squared / (valid.length - estimator.degreesOfFreedomLost);
    scale = Math.sqrt(variance) + eps;
  }
  return rewards.map((r) => (isMissingReward(r) ? 0 : ((r as number) - average) / scale));
}
