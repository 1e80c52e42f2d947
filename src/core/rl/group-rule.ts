import { InvalidArgumentError } from '../errors';
import { groupAdvantages, isMissingReward, type GroupAdvantageOptions, type MaybeReward } from './advantages';

export interface GroupRuleOptions extends GroupAdvantageOptions {
  /** Leave out of the update every group whose valid rewards are all equal (they carry no signal). */
  dropZeroVarianceGroups?: boolean;
}

/**
 * `usable`: the group takes part in the update. `underfilled`: fewer than two valid rewards
 * (nothing to compare against). `zero-variance`: every valid reward equal, and such groups are dropped.
 */
export type GroupStatus = 'usable' | 'underfilled' | 'zero-variance';

export interface GroupOutcome {
  status: GroupStatus;
  /** Per sample: its advantage, or `null` when it takes no part in the update (missing reward, or the group is not usable). */
  advantages: Array<number | null>;
  /** Samples whose reward is missing. */
  missing: number;
}

/**
 * The group rule (docs/method.md#groups), the one place it is written: a group contributes to
 * the update when it has at least two valid rewards and (with `dropZeroVarianceGroups`) they are
 * not all equal; its members with a valid reward then get their GRPO advantage.
 */
export function applyGroupRule(
  rewards: readonly MaybeReward[],
  options: GroupRuleOptions = {},
): GroupOutcome {
  const valid = rewards.filter((r) => !isMissingReward(r)) as number[];
  const missing = rewards.length - valid.length;
  if (valid.length < 2) return { status: 'underfilled', advantages: rewards.map(() => null), missing };
  if (options.dropZeroVarianceGroups === true && valid.every((r) => r === valid[0]))
    return { status: 'zero-variance', advantages: rewards.map(() => null), missing };
  const advantages = groupAdvantages(rewards, options);
  return {
    status: 'usable',
    advantages: rewards.map((r, i) => (isMissingReward(r) ? null : advantages[i]!)),
    missing,
  };
}

export interface BatchAdvantages {
  /** Per sample, in the order given: its advantage, or `null` when it takes no part in the update (missing reward, dropped group, or too few valid rewards). */
  advantages: Array<number | null>;
  groupCount: number;
  /** Groups left out because all valid rewards were equal (only with dropZeroVarianceGroups). */
  droppedZeroVarianceGroups: number;
  /** Groups with fewer than two valid rewards. */
  underfilledGroups: number;
  missingRewards: number;
}

/**
 * Advantages for a whole batch: samples are grouped by `groupIds` (any order; interleaved
 * B x n_agent is the usual layout) and each group goes through the group rule on its own.
 */
export function batchAdvantages(
  rewards: readonly MaybeReward[],
  groupIds: readonly string[],
  options: GroupRuleOptions = {},
): BatchAdvantages {
  if (rewards.length !== groupIds.length) {
    throw new InvalidArgumentError({
      argument: 'groupIds',
      message: `has ${groupIds.length} entries but 'rewards' has ${rewards.length}`,
    });
  }
  const members = new Map<string, number[]>();
  groupIds.forEach((id, i) => {
    if (typeof id !== 'string' || id.length === 0)
      throw new InvalidArgumentError({ argument: `groupIds[${i}]`, message: 'must be a non-empty string' });
    const list = members.get(id);
    if (list) list.push(i);
    else members.set(id, [i]);
  });
  const result: BatchAdvantages = {
    advantages: rewards.map(() => null),
    groupCount: members.size,
    droppedZeroVarianceGroups: 0,
    underfilledGroups: 0,
    missingRewards: 0,
  };
  for (const indices of members.values()) {
    const outcome = applyGroupRule(
      indices.map((i) => rewards[i] ?? null),
      options,
    );
    result.missingRewards += outcome.missing;
    if (outcome.status === 'underfilled') result.underfilledGroups++;
    if (outcome.status === 'zero-variance') result.droppedZeroVarianceGroups++;
    indices.forEach((sampleIndex, k) => {
      result.advantages[sampleIndex] = outcome.advantages[k]!;
    });
  }
  return result;
}
