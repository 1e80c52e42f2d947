import { isJudgeSuccess } from '../core/reward/success';
import { mean } from '../core/stats';
import type { PolicyUpdateSummary, UpdateFigures } from '../core/rl/policy-update';
import type { ScoredBatch } from '../searcher';

/** One step's figures. Timing fields (`*PerSecond`, `*Ms`) vary between runs; the rest is deterministic under a seed. */
export interface StepMetrics extends UpdateFigures {
  step: number;
  epoch: number;
  prompts: number;
  episodes: number;
  /** Mean over rewards that could be computed (`null` when none could); `missingRewards` counts the rest. */
  rewardMean: number | null;
  rewardStd: number | null;
  missingRewards: number;
  /** Share of judged episodes with the judge's full score (`isJudgeSuccess`); `null` when nothing was judged. */
  successRate: number | null;
  /** Share of episodes that retrieved at least one golden page. */
  goldenHitRate: number;
  ndcgMean: number;
  turnsMean: number;
  /** Invalid actions per policy turn. */
  invalidActionRate: number;
  /** Episodes that ended by the policy's own search_complete/answer. */
  completionRate: number;
  updatesApplied: number;
  /**
   * Applied updates whose minibatch had no learning signal (every advantage 0, no KL or entropy
   * term): the optimizer stepped with a zero gradient, without the forward and backward, so they
   * add nothing to the loss, KL, clip fraction or entropy means (0 when every update was one).
   */
  updatesNoSignal: number;
  /**
   * Updates that anticipated the rollout's log-probs (a step's first) and needed a second run a
   * chunk because the gradient at the new ones differed (0 on policy; see LossFunction).
   */
  updatesCorrected: number;
  updatesSkipped: number;
  skippedReasons: string[];
  rolloutTokens: number;
  trainTokens: number;
  rolloutTokensPerSecond: number;
  trainTokensPerSecond: number;
  rolloutMs: number;
  updateMs: number;
}

/**
 * The step metrics that measure time and speed: they differ between otherwise equal runs (a resumed
 * run is compared without them).
 */
export const TIMING_METRICS = [
  'rolloutTokensPerSecond',
  'trainTokensPerSecond',
  'rolloutMs',
  'updateMs',
] as const satisfies ReadonlyArray<keyof StepMetrics>;

/** A step's metrics from its scored batch and its update. */
export function stepMetrics(
  step: number,
  epoch: number,
  prompts: number,
  batch: ScoredBatch,
  update: PolicyUpdateSummary,
  rolloutMs: number,
  updateMs: number,
): StepMetrics {
  const trajectories = batch.episodes.map((e) => e.trajectory);
  const rewards = trajectories.map((t) => t.reward).filter((r): r is number => r !== null);
  const rewardMean = rewards.length === 0 ? null : mean(rewards);
  const judged = trajectories
    .map((t) => t.rewardDetail?.components.judgeScore)
    .filter((s): s is number => typeof s === 'number');
  const turns = trajectories.map((t) => t.turns.filter((turn) => !turn.forced).length);
  const totalTurns = turns.reduce((a, b) => a + b, 0);
  const rolloutTokens = trajectories.reduce((n, t) => n + t.tokenSteps.length, 0);
  return {
    step,
    epoch,
    prompts,
    episodes: trajectories.length,
    rewardMean,
    rewardStd: rewardMean === null ? null : Math.sqrt(mean(rewards.map((r) => (r - rewardMean) ** 2))),
    missingRewards: batch.missingRewards,
    successRate: judged.length === 0 ? null : judged.filter(isJudgeSuccess).length / judged.length,
    goldenHitRate: mean(
      trajectories.map((t) => (t.retrievedBasenames.some((b) => t.goldenBasenames.includes(b)) ? 1 : 0)),
    ),
    ndcgMean: mean(trajectories.map((t) => t.rewardDetail?.components.ndcg ?? 0)),
    turnsMean: mean(turns),
    invalidActionRate:
      totalTurns === 0 ? 0 : trajectories.reduce((n, t) => n + t.invalidActions, 0) / totalTurns,
    completionRate: mean(
      trajectories.map((t) => (t.terminated === 'complete' || t.terminated === 'answer' ? 1 : 0)),
    ),
    loss: update.loss,
    clipFraction: update.clipFraction,
    kl: update.kl,
    entropy: update.entropy,
    gradNorm: update.gradNorm,
    gradNormMax: update.gradNormMax,
    updatesApplied: update.applied,
    updatesNoSignal: update.noSignal,
    updatesCorrected: update.corrected,
    updatesSkipped: update.skipped.length,
    skippedReasons: update.skipped,
    rolloutTokens,
    trainTokens: update.tokens,
    rolloutTokensPerSecond: rolloutMs > 0 ? (rolloutTokens / rolloutMs) * 1000 : 0,
    trainTokensPerSecond: updateMs > 0 ? (update.tokens / updateMs) * 1000 : 0,
    rolloutMs,
    updateMs,
  };
}
