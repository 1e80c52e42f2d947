import { InvalidArgumentError } from '../errors';
import type { Trajectory } from '../trajectory/trajectory';
import type { LogProbBatch, LossFunction } from '../../ports/policy-backend';
import type { LossAggregation } from './aggregation';
import { klPenalty, type KlEstimator } from './kl';
import {
  misplacedLossSettings,
  policyLoss,
  policyLossOf,
  type PolicyLossKind,
  type PolicyLossOwnSettings,
} from './policy-loss';

export interface UpdateBatch extends LogProbBatch {
  /** Log-probs recorded at generation time, one per policy token (the "old" policy). */
  oldLogProbs: number[][];
  /** With `klReference: 'initial'`: the frozen initial policy's log-probs of the same tokens, the KL's reference. */
  referenceLogProbs?: number[][];
  advantages: number[];
  sampleIds: string[];
}

/**
 * The training view of trajectories: each full sequence exactly as generated (token-in/token-out,
 * never re-tokenised) and the positions of its policy tokens, which are the only ones scored.
 * Tokens after the last policy token (a forced completion, the generator's answer) cannot change
 * a causal model's log-probs of earlier tokens, so the sequence is cut there. Trajectories with a
 * missing advantage are left out.
 *
 * With `stateMasking: false` (an ablation, docs/method.md#state-masking) the observation tokens
 * between the first and the last policy token are scored too; their old log-probs are NaN here
 * (nothing sampled them) and `recomputed` lists where they are, for the caller to fill in.
 */
export function buildUpdateBatch(
  trajectories: readonly Trajectory[],
  options: { stateMasking?: boolean } = {},
): UpdateBatch & { recomputed: Array<{ row: number; index: number }> } {
  const stateMasking = options.stateMasking ?? true;
  const batch: UpdateBatch & { recomputed: Array<{ row: number; index: number }> } = {
    inputIds: [],
    positions: [],
    oldLogProbs: [],
    advantages: [],
    sampleIds: [],
    recomputed: [],
  };
  trajectories.forEach((t, i) => {
    if (t.advantage === null || Number.isNaN(t.advantage)) return;
    if (t.tokenSteps.length === 0) return;
    t.tokenSteps.forEach((step, k) => {
      if (t.fullInputIds[step.position] !== step.tokenId || t.lossMask[step.position] !== 1) {
        throw new InvalidArgumentError({
          argument: `trajectories[${i}].tokenSteps[${k}]`,
          message: `does not match fullInputIds/lossMask at position ${step.position}`,
        });
      }
    });
    const last = t.tokenSteps[t.tokenSteps.length - 1]!.position;
    batch.inputIds.push(t.fullInputIds.slice(0, last + 1));
    if (stateMasking) {
      batch.positions.push(t.tokenSteps.map((s) => s.position));
      batch.oldLogProbs.push(t.tokenSteps.map((s) => s.logProb));
    } else {
      const recorded = new Map(t.tokenSteps.map((s) => [s.position, s.logProb]));
      const positions: number[] = [];
      const old: number[] = [];
      for (let p = t.tokenSteps[0]!.position; p <= last; p++) {
        const logProb = recorded.get(p);
        if (logProb === undefined)
          batch.recomputed.push({ row: batch.positions.length, index: positions.length });
        positions.push(p);
        old.push(logProb ?? Number.NaN);
      }
      batch.positions.push(positions);
      batch.oldLogProbs.push(old);
    }
    batch.advantages.push(t.advantage);
    batch.sampleIds.push(t.sampleId);
  });
  return batch;
}

/** A run's loss settings (`rl.loss`): the policy loss and its settings, the clip range, the KL. */
export interface LossSettings extends PolicyLossOwnSettings {
  kind: PolicyLossKind;
  clipLow: number;
  clipHigh: number;
  aggregation: LossAggregation;
  /** KL coefficient (the method's focused rounds: 0, docs/method.md#hyperparameters). */
  klCoef: number;
  klEstimator: KlEstimator;
  /**
   * The KL's reference (docs/method.md#kl): `rollout` (default) is the rollout policy's recorded
   * log-probs (a rollout-policy KL); `initial` is a frozen copy of the initial policy, as verl does.
   */
  klReference?: KlReference;
}

export type KlReference = 'rollout' | 'initial';

/**
 * The core's loss as a backend callback: policy loss + klCoef * KL, value and gradient per
 * scored position. Every position of the batch is a policy token, so the mask is all ones. The
 * KL is against `referenceLogProbs` when the batch has them, else against the rollout's. The
 * loss is `settings.kind`'s entry of `POLICY_LOSSES`, with its own settings; another kind's
 * settings are an InvalidArgumentError naming them. `onPolicy`: the policy has not been updated
 * since it sampled the batch (the first update of a step), so the loss anticipates the old log-probs.
 */
export function createLossFunction(
  batch: Pick<UpdateBatch, 'oldLogProbs' | 'advantages' | 'referenceLogProbs'>,
  settings: LossSettings,
  { onPolicy = false }: { onPolicy?: boolean } = {},
): LossFunction {
  const options = policyLossOf(settings.kind, 'settings.kind').inputOptions(settings);
  const misplaced = misplacedLossSettings(settings)[0];
  if (misplaced)
    throw new InvalidArgumentError({ argument: `settings.${misplaced.field}`, message: misplaced.message });
  const mask = batch.oldLogProbs.map((row) => row.map(() => 1));
  const loss: LossFunction = (newLogProbs) => {
    const pg = policyLoss({
      kind: settings.kind,
      oldLogProbs: batch.oldLogProbs,
      newLogProbs,
      mask,
      advantages: batch.advantages,
      clipLow: settings.clipLow,
      clipHigh: settings.clipHigh,
      aggregation: settings.aggregation,
      ...options,
    });
    // The KL is measured whatever klCoef is (a metric to watch); it enters the loss only when klCoef > 0.
    const kl = klPenalty({
      estimator: settings.klEstimator,
      oldLogProbs: batch.referenceLogProbs ?? batch.oldLogProbs,
      newLogProbs,
      mask,
      aggregation: settings.aggregation,
    });
    const metrics: Record<string, number> = {
      policyLoss: pg.value,
      clipFraction: pg.clipFraction,
      kl: kl.value,
      ...(pg.clipFractionLower !== undefined && { clipFractionLower: pg.clipFractionLower }),
    };
    if (settings.klCoef === 0) return { value: pg.value, gradNewLogProbs: pg.gradNewLogProbs, metrics };
    return {
      value: pg.value + settings.klCoef * kl.value,
      gradNewLogProbs: pg.gradNewLogProbs.map((row, i) =>
        row.map((g, t) => g + settings.klCoef * kl.gradNewLogProbs[i]![t]!),
      ),
      metrics,
    };
  };
  // On policy (the weights that sampled the tokens are the ones trained), the new log-probs are
  // the rollout's up to float32 rounding: an engine may anticipate them (LossFunction).
  return onPolicy ? Object.assign(loss, { anticipatedLogProbs: batch.oldLogProbs }) : loss;
}
