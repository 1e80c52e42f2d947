import { InvalidArgumentError } from '../errors';
import { applyGroupRule } from '../rl/group-rule';
import { policyLoss } from '../rl/policy-loss';

/**
 * `selectorGrpoLoss`'s input: the sampled selections' shot log-probs and rewards, grouped per
 * query.
 */
export interface SelectorGrpoInput {
  /** Per sampled selection: the log-prob of each chosen shot under the policy that sampled it. */
  shotLogProbs: number[][];
  /** Per sampled selection: its reward (vqa_acc_score), `null` when scoring failed. */
  rewards: Array<number | null>;
  /** Per sampled selection: its group (the query it was sampled for). */
  groupIds: readonly string[];
  clipLow?: number;
  clipHigh?: number;
}

/** The GRPO loss of the selector and its gradient by each shot's log-prob. */
export interface SelectorGrpoResult {
  /** Per selection, per shot: d loss / d logp, for a backend to back-propagate `sum g * logp`. */
  gradShotLogProbs: number[][];
  loss: number;
  advantages: Array<number | null>;
  usableGroups: number;
}

/**
 * GRPO for the pointer selector (docs/method.md#pointer-selector): the group is the G selections
 * sampled on-policy from one query's own pool, advantages by the group rule (zero-variance
 * groups dropped), and the PPO-clip loss over the shots' log-probs with one sequence per
 * selection. Sampled and updated by the same weights, the ratio is 1 and the gradient is
 * -A / (shots in the batch) per shot.
 */
export function selectorGrpoLoss(input: SelectorGrpoInput): SelectorGrpoResult {
  const { shotLogProbs, rewards, groupIds } = input;
  if (shotLogProbs.length !== rewards.length || rewards.length !== groupIds.length) {
    throw new InvalidArgumentError({
      argument: 'rewards',
      message: `shotLogProbs (${shotLogProbs.length}), rewards (${rewards.length}) and groupIds (${groupIds.length}) must have one entry per selection`,
    });
  }
  const members = new Map<string, number[]>();
  groupIds.forEach((id, i) => members.set(id, [...(members.get(id) ?? []), i]));
  const advantages: Array<number | null> = rewards.map(() => null);
  let usableGroups = 0;
  for (const indices of members.values()) {
    const outcome = applyGroupRule(
      indices.map((i) => rewards[i] ?? null),
      { dropZeroVarianceGroups: true },
    );
    if (outcome.status === 'usable') usableGroups++;
    indices.forEach((i, k) => (advantages[i] = outcome.advantages[k]!));
  }
  const used = shotLogProbs.map((_, i) => i).filter((i) => advantages[i] !== null);
  if (used.length === 0)
    return {
      gradShotLogProbs: shotLogProbs.map((row) => row.map(() => 0)),
      loss: 0,
      advantages,
      usableGroups,
    };
  const rows = used.map((i) => shotLogProbs[i]!);
  const result = policyLoss({
    kind: 'ppo_clip',
    oldLogProbs: rows,
    newLogProbs: rows,
    mask: rows.map((row) => row.map(() => 1)),
    advantages: used.map((i) => advantages[i]!),
    clipLow: input.clipLow ?? 0.2,
    clipHigh: input.clipHigh ?? 0.2,
    aggregation: 'token-mean',
  });
  const gradShotLogProbs = shotLogProbs.map((row) => row.map(() => 0));
  used.forEach((i, k) => (gradShotLogProbs[i] = result.gradNewLogProbs[k]!));
  return { gradShotLogProbs, loss: result.value, advantages, usableGroups };
}
