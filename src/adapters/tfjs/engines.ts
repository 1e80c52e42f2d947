import type * as tf from '@tensorflow/tfjs';
import type { LogProbBatch, LossFunction } from '../../ports/policy-backend';
import type { KvCacheRow, KvCacheShape } from '../../rollout-engine/kv-cache';
import type { ScheduledRow } from '../../rollout-engine/rollout-scheduler';
import type { PolicyContext } from './state';

// The two engines a TfjsPolicy runs on, as types only: rollouts (the forward the decoder gives the
// scheduler) and training (the gradients `update` applies). tfjs implements both
// (tfjs-rollouts.ts, tfjs-training.ts); ONNX Runtime is the alternative (onnx-rollouts.ts,
// onnx-training.ts), chosen by the settings `rollouts` and `training` in engine-selection.ts.

/** One rollout: its tokens and its key/value cache. */
export interface RowState extends ScheduledRow, KvCacheRow {}

export interface CacheShape extends KvCacheShape {
  vocabSize: number;
}

/**
 * One forward over `rows` feeding their uncached tokens: log-probs [rows, vocabulary] at each row's
 * last token (log softmax(logits / temperature); 0 and 1 leave the logits as they are); the rows'
 * caches then hold every token.
 */
export type RowsForward = (rows: RowState[], temperature: number) => Float32Array[] | Promise<Float32Array[]>;

/** Where rollouts run their forwards. */
export interface RolloutEngine {
  forward: RowsForward;
  /** Frees what the engine holds (an ONNX Runtime session); the model stays. */
  dispose(): Promise<void>;
}

/** One update's work, checked and planned by training.ts before an engine computes it. */
export interface GradientPlan {
  /** Row indices per forward (under `maxAttentionElements`). */
  chunks: number[][];
  /** The temperature the log-probs are taken at (greedy, 0, is scored at 1). */
  temperature: number;
  /** The entropy bonus's coefficient (>= 0), over `scored` positions. */
  entropyCoef: number;
  /** Scored positions in the batch (> 0). */
  scored: number;
  signal?: AbortSignal;
}

export interface ComputedGradients {
  /** One per model parameter, in `model.parameters` order; the caller disposes them. */
  grads: tf.Tensor[];
  value: number;
  metrics: Record<string, number>;
  /** Mean entropy over the scored positions. */
  entropy: number;
}

/**
 * Where `update` and `gradients` compute the gradients of sum_t g_t * logp_t (g from the core's
 * loss) minus the entropy bonus; AdamW applies them on tfjs either way.
 */
export interface TrainingEngine {
  computeGradients(batch: LogProbBatch, lossFn: LossFunction, plan: GradientPlan): Promise<ComputedGradients>;
  /** Frees what the engine holds (ONNX Runtime sessions); the model stays. */
  dispose(): Promise<void>;
}

/** Makes a policy's engines once its model exists. */
export interface PolicyEngines {
  createTraining(context: PolicyContext): Promise<TrainingEngine>;
  createRollouts(context: PolicyContext, shape: CacheShape): Promise<RolloutEngine>;
}
