import { InvalidArgumentError } from '../errors';

/**
 * The weights of the combined reward: `wJudge * judge + wNdcg * ndcg + wFormat` once the format
 * gate passes.
 */
export interface RewardWeights {
  judge: number;
  ndcg: number;
  format: number;
}

/** The reference implementation's defaults: judge 0.8, NDCG 0.2, format 0 (docs/method.md#reward-presets). */
export const DEFAULT_REWARD_WEIGHTS: Readonly<RewardWeights> = Object.freeze({
  judge: 0.8,
  ndcg: 0.2,
  format: 0,
});

/** Weights by name: the method's settings table and the reference implementation (docs/method.md#reward-presets). */
export const REWARD_PRESETS = Object.freeze({
  /** Phase 1: 0.1 + 0.9 * NDCG when the format passes. */
  phase1: Object.freeze({ judge: 0, ndcg: 0.9, format: 0.1 }),
  /** Focused rounds 1-3: judge only. */
  focused: Object.freeze({ judge: 1, ndcg: 0, format: 0 }),
  /** A unified phase: format 0.1, NDCG 0.5, judge 0.4. */
  unified: Object.freeze({ judge: 0.4, ndcg: 0.5, format: 0.1 }),
  default: DEFAULT_REWARD_WEIGHTS,
} satisfies Record<string, Readonly<RewardWeights>>);

/** A preset's name (`REWARD_PRESETS`): `default`, `phase1`, `focused` or `unified`. */
export type RewardPresetName = keyof typeof REWARD_PRESETS;

/**
 * The weights a reward configuration names (`reward.weights`): explicit weights as given, a
 * preset's name as a copy of the preset's weights. An unknown name is an InvalidArgumentError
 * listing the presets.
 */
export function resolveRewardWeights(weights: RewardWeights | RewardPresetName): RewardWeights {
  if (typeof weights !== 'string') return weights;
  if (!Object.hasOwn(REWARD_PRESETS, weights))
    throw new InvalidArgumentError({
      argument: 'reward.weights',
      message: `'${weights}' is not a preset; use one of ${Object.keys(REWARD_PRESETS).join(', ')}, or give { judge, ndcg, format }`,
    });
  return { ...REWARD_PRESETS[weights] };
}

/** What a reward is combined from. */
export interface RewardComponents {
  /** Did the episode pass the format gate (every turn a valid action, ended by the policy)? */
  formatPassed: boolean;
  /** Judge score in [0, 1]; `null` when no judge was asked (weight 0) or the judge failed. */
  judgeScore: number | null;
  /** NDCG of retrieved against golden pages, in [0, 1]. */
  ndcg: number;
}

/**
 * A computed reward with its parts, or a missing one with its cause
 * (docs/method.md#missing-rewards).
 */
export type RewardOutcome =
  | { status: 'ok'; value: number; components: RewardComponents; weights: RewardWeights }
  | {
      status: 'missing';
      cause: RewardFailure;
      components: Partial<RewardComponents>;
      weights: RewardWeights;
    };

/** Why a reward is missing. */
export interface RewardFailure {
  /** What failed: the generator's terminal answer, the judge, or the episode itself. */
  stage: 'episode' | 'generator' | 'judge';
  /** `deadline`: a pipeline deadline (per prompt, per reward, per step) passed before it was done. */
  /** `adapter_error`: the adapter's own code threw (a bug, not a provider failure). */
  kind: 'timeout' | 'deadline' | 'provider_error' | 'adapter_error' | 'invalid_output' | 'aborted' | 'error';
  message: string;
}

export function assertWeights(weights: RewardWeights): void {
  for (const key of ['judge', 'ndcg', 'format'] as const) {
    const w = weights[key];
    if (!Number.isFinite(w))
      throw new InvalidArgumentError({
        argument: `weights.${key}`,
        message: `must be a finite number, got ${String(w)}`,
      });
  }
}

/**
 * r = 0 if the format gate fails, else wJudge * s + wNdcg * n + wFormat * 1
 * (docs/method.md#combined-reward). A judge weight > 0 with no judge score cannot be computed: the reward is missing.
 */
export function combineReward(
  components: RewardComponents,
  weights: RewardWeights = DEFAULT_REWARD_WEIGHTS,
): RewardOutcome {
  assertWeights(weights);
  const { formatPassed, judgeScore, ndcg } = components;
  if (!(Number.isFinite(ndcg) && ndcg >= 0 && ndcg <= 1))
    throw new InvalidArgumentError({
      argument: 'components.ndcg',
      message: `must be in [0, 1], got ${ndcg}`,
    });
  if (judgeScore !== null && !(Number.isFinite(judgeScore) && judgeScore >= 0 && judgeScore <= 1)) {
    throw new InvalidArgumentError({
      argument: 'components.judgeScore',
      message: `must be in [0, 1] or null, got ${judgeScore}`,
    });
  }
  if (!formatPassed) return { status: 'ok', value: 0, components, weights };
  if (weights.judge !== 0 && judgeScore === null) {
    return {
      status: 'missing',
      cause: {
        stage: 'judge',
        kind: 'error',
        message: 'the judge weight is non-zero but no judge score is available',
      },
      components,
      weights,
    };
  }
  const value = weights.judge * (judgeScore ?? 0) + weights.ndcg * ndcg + weights.format;
  return { status: 'ok', value, components, weights };
}

/** Phase 1 (docs/method.md#reward-presets): 0.1 + 0.9 * NDCG if the format passes, else 0. */
export function phase1Reward(formatPassed: boolean, ndcg: number): number {
  const outcome = combineReward({ formatPassed, judgeScore: null, ndcg }, REWARD_PRESETS.phase1);
  return outcome.status === 'ok' ? outcome.value : 0;
}

/** The reward as a number for advantage computation: a missing reward is `null`, never 0. */
export function rewardValue(outcome: RewardOutcome): number | null {
  return outcome.status === 'ok' ? outcome.value : null;
}
