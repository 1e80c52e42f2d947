import { InvalidArgumentError } from '../errors';
import type { Trajectory } from '../trajectory/trajectory';
import type { LogProbBatch, LossFunction } from '../../ports/policy-backend';
import type { LossAggregation } from './aggregation';
import { klPenalty, type KlEstimator } from './kl';
import { policyLoss, type PolicyLossKind } from './policy-loss';

export interface UpdateBatch extends LogProbBatch {
  /** Log-probs recorded at generation time, one per policy token (the "old" policy). */
  oldLogProbs: number[][];
  advantages: number[];
  sampleIds: string[];
}

/**
 * The training view of trajectories: each full sequence exactly as generated (token-in/token-out,
 * never re-tokenised) and the positions of its policy tokens, which are the only ones scored.
 * Tokens after the last policy token (a forced completion, the generator's answer) cannot change
 * a causal model's log-probs of earlier tokens, so the sequence is cut there. Trajectories with a
 * missing advantage are left out.
 */
export function buildUpdateBatch(trajectories: readonly Trajectory[]): UpdateBatch {
  const batch: UpdateBatch = { inputIds: [], positions: [], oldLogProbs: [], advantages: [], sampleIds: [] };
  trajectories.forEach((t, i) => {
    if (t.advantage === null || Number.isNaN(t.advantage)) return;
    if (t.tokenSteps.length === 0) return;
    t.tokenSteps.forEach((step, k) => {
      if (t.fullInputIds[step.position] !== step.tokenId || t.lossMask[step.position] !== 1) {
        throw new InvalidArgumentError(`trajectories[${i}].tokenSteps[${k}]`, `does not match fullInputIds/lossMask at position ${step.position}`);
      }
    });
    const last = t.tokenSteps[t.tokenSteps.length - 1]!.position;
    batch.inputIds.push(t.fullInputIds.slice(0, last + 1));
    batch.positions.push(t.tokenSteps.map((s) => s.position));
    batch.oldLogProbs.push(t.tokenSteps.map((s) => s.logProb));
    batch.advantages.push(t.advantage);
    batch.sampleIds.push(t.sampleId);
  });
  return batch;
}

export interface LossSettings {
  kind: PolicyLossKind;
  clipLow: number;
  clipHigh: number;
  aggregation: LossAggregation;
  /** KL coefficient (the method's focused rounds: 0, docs/method.md#hyperparameters). */
  klCoef: number;
  klEstimator: KlEstimator;
}

/**
 * The core's loss as a backend callback: policy loss + klCoef * KL, value and gradient per
 * scored position. Every position of the batch is a policy token, so the mask is all ones.
 */
export function createLossFunction(batch: Pick<UpdateBatch, 'oldLogProbs' | 'advantages'>, settings: LossSettings): LossFunction {
  const mask = batch.oldLogProbs.map((row) => row.map(() => 1));
  return (newLogProbs) => {
    const pg = policyLoss({
      kind: settings.kind,
      oldLogProbs: batch.oldLogProbs,
      newLogProbs,
      mask,
      advantages: batch.advantages,
      clipLow: settings.clipLow,
      clipHigh: settings.clipHigh,
      aggregation: settings.aggregation,
    });
    // The KL is measured whatever klCoef is (a metric to watch); it enters the loss only when klCoef > 0.
    const kl = klPenalty({ estimator: settings.klEstimator, oldLogProbs: batch.oldLogProbs, newLogProbs, mask, aggregation: settings.aggregation });
    const metrics: Record<string, number> = { policyLoss: pg.value, clipFraction: pg.clipFraction, kl: kl.value };
    if (settings.klCoef === 0) return { value: pg.value, gradNewLogProbs: pg.gradNewLogProbs, metrics };
    return {
      value: pg.value + settings.klCoef * kl.value,
      gradNewLogProbs: pg.gradNewLogProbs.map((row, i) => row.map((g, t) => g + settings.klCoef * kl.gradNewLogProbs[i]![t]!)),
      metrics,
    };
  };
}
