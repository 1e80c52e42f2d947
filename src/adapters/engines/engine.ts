import type { LogProbBatch, LossFunction } from '../../ports/policy-backend';
import type { KvCacheRow, KvCacheShape } from '../../rollout-engine/kv-cache';
import type { ScheduledRow } from '../../rollout-engine/rollout-scheduler';

// The policy engines' two interfaces, written once: a rollout engine (the forward the rollout
// scheduler drives) and a training engine (the gradients of one update). The tfjs policy's
// transformer runs on either tfjs or ONNX Runtime (transformer/), the Llama family on ONNX Runtime
// (llama/); a policy holds its engines as these types, chosen once at creation (the tfjs policy by
// its settings `rollouts` and `training`).

/** One rollout: its tokens and its key/value cache. */
export interface RowState extends ScheduledRow, KvCacheRow {}

/** A rollout engine's key/value cache shape and the vocabulary its log-probs cover. */
export interface CacheShape extends KvCacheShape {
  vocabSize: number;
}

/**
 * One forward over `rows` feeding their uncached tokens: log-probs [rows, vocabulary] at each row's
 * last token (log softmax(logits / temperature); 0 and 1 leave the logits as they are); the rows'
 * caches then hold every token.
 */
export type RowsForward<Row extends RowState = RowState> = (
  rows: Row[],
  temperature: number,
) => Float32Array[] | Promise<Float32Array[]>;

/** Where rollouts run their forwards. */
export interface RolloutEngine<Row extends RowState = RowState> {
  forward: RowsForward<Row>;
  /** Frees what the engine holds (ONNX Runtime sessions); the model stays. */
  dispose(): Promise<void>;
}

/** One update's work, checked and planned by the policy before an engine computes it. */
export interface GradientPlan {
  /** Batch row indices per forward (each chunk within the engine's memory bound); rows with nothing scored may be left out. */
  chunks: number[][];
  /** The temperature the log-probs are taken at (greedy, 0, is scored at 1). */
  temperature: number;
  /** The entropy bonus's coefficient (>= 0), over `scored` positions. */
  entropyCoef: number;
  /** Scored positions in the batch (> 0). */
  scored: number;
  signal?: AbortSignal | undefined;
}

/** What a training engine hands back: the gradients (in the engine's own form) and the loss's figures. */
export interface ComputedGradients<Gradients> {
  /** The gradient of the objective by each trained weight. */
  grads: Gradients;
  /** The loss's value (the entropy bonus not subtracted). */
  value: number;
  metrics: Record<string, number>;
  /** Mean entropy over the scored positions. */
  entropy: number;
}

/**
 * Where `update` computes the gradients of sum_t g_t * logp_t (g from the core's loss) minus the
 * entropy bonus; the policy's optimizer applies them.
 */
export interface TrainingEngine<Gradients> {
  computeGradients(
    batch: LogProbBatch,
    lossFn: LossFunction,
    plan: GradientPlan,
  ): Promise<ComputedGradients<Gradients>>;
  /** Frees what the engine holds (ONNX Runtime sessions); the model stays. */
  dispose(): Promise<void>;
}
