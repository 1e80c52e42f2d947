import * as tf from '@tensorflow/tfjs';
import { AbortedError, InvalidArgumentError } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import type { LogProbBatch, LossFunction, UpdateOptions, UpdateResult } from '../../ports/policy-backend';
import { checkLogProbBatch } from '../../rollout-engine/batch-checks';
import { AdamW, type AdamWSettings } from './adamw';
import type { ComputedGradients } from '../engines/engine';
import type { TfjsTrainingEngine } from './engine-selection';
import { chunkedLogProbs } from '../engines/transformer/tfjs-training';
import { parseOptimizerSettings } from './settings';
import { ensureReady, type PolicyContext } from './state';
import type { TransformerConfig } from '../engines/transformer/transformer';

/** Checks a batch against the model; returns the temperature to score at (greedy, 0, scores at 1). */
function checkBatch(batch: LogProbBatch, modelConfig: TransformerConfig): number {
  return checkLogProbBatch(batch, modelConfig);
}

/** Row indices grouped into forwards whose attention scores (rows * heads * length^2) stay under the memory bound. */
function rowChunks(batch: LogProbBatch, heads: number, maxAttentionElements: number): number[][] {
  const chunks: number[][] = [];
  let current: number[] = [];
  let longest = 0;
  batch.inputIds.forEach((ids, i) => {
    const nextLongest = Math.max(longest, ids.length);
    if (
      current.length > 0 &&
      (current.length + 1) * heads * nextLongest * nextLongest > maxAttentionElements
    ) {
      chunks.push(current);
      current = [];
      longest = 0;
    }
    current.push(i);
    longest = Math.max(longest, ids.length);
  });
  if (current.length > 0) chunks.push(current);
  return chunks;
}

/** One sequence's logits [T][V] from a full forward: for comparing with other implementations. */
export async function sequenceLogits(
  context: PolicyContext,
  inputIds: readonly number[],
): Promise<Float32Array[]> {
  await ensureReady(context);
  const { modelConfig, state } = context;
  checkBatch({ inputIds: [[...inputIds]], positions: [[]] }, modelConfig);
  const ids = Int32Array.from(inputIds);
  const logits = tf.tidy(() => state.model.forwardFull(tf.tensor2d(ids, [1, ids.length], 'int32'), ids));
  const data = logits.dataSync() as Float32Array;
  logits.dispose();
  const V = modelConfig.vocabSize;
  return Array.from(ids, (_, t) => data.slice(t * V, (t + 1) * V));
}

export async function logProbs(
  context: PolicyContext,
  batch: LogProbBatch,
  callOptions?: CallOptions,
): Promise<number[][]> {
  await ensureReady(context);
  const { modelConfig, settings, state } = context;
  const temperature = checkBatch(batch, modelConfig);
  return chunkedLogProbs(
    state.model,
    batch,
    rowChunks(batch, modelConfig.heads, settings.maxAttentionElements),
    temperature,
    { what: 'logProbs', signal: callOptions?.signal },
  );
}

/**
 * Checks and plans an update's gradients, then has the training engine compute them: the gradient
 * of sum_t g_t * logp_t (g from the core's loss) minus the entropy bonus. `null` when nothing is
 * scored.
 */
async function computeGradients(
  context: PolicyContext,
  engine: TfjsTrainingEngine,
  batch: LogProbBatch,
  lossFn: LossFunction,
  updateOptions: UpdateOptions,
): Promise<ComputedGradients<tf.Tensor[]> | null> {
  const { modelConfig, settings } = context;
  const temperature = checkBatch(batch, modelConfig);
  const entropyCoef = updateOptions.entropyCoef ?? 0;
  if (!(Number.isFinite(entropyCoef) && entropyCoef >= 0))
    throw new InvalidArgumentError({ argument: 'entropyCoef', message: `must be >= 0, got ${entropyCoef}` });
  if (updateOptions.signal?.aborted)
    throw new AbortedError({ what: 'update', cause: updateOptions.signal.reason });
  const scored = batch.positions.reduce((n, row) => n + row.length, 0);
  if (scored === 0) return null;
  const chunks = rowChunks(batch, modelConfig.heads, settings.maxAttentionElements);
  return engine.computeGradients(batch, lossFn, {
    chunks,
    temperature,
    entropyCoef,
    scored,
    signal: updateOptions.signal,
  });
}

export async function update(
  context: PolicyContext,
  engine: TfjsTrainingEngine,
  batch: LogProbBatch,
  lossFn: LossFunction,
  updateOptions: UpdateOptions = {},
): Promise<UpdateResult> {
  await ensureReady(context);
  const computed = await computeGradients(context, engine, batch, lossFn, updateOptions);
  if (computed === null)
    return { value: 0, gradNorm: 0, applied: false, skippedReason: 'no positions to score' };
  try {
    const step = context.state.optimizer.apply(computed.grads);
    return {
      value: computed.value,
      gradNorm: step.gradNorm,
      applied: step.applied,
      ...(step.skippedReason && { skippedReason: step.skippedReason }),
      metrics: { ...computed.metrics, entropy: computed.entropy, learningRate: step.learningRate },
    };
  } finally {
    for (const t of computed.grads) t.dispose();
  }
}

/** The gradient `update` would apply (before clipping), by parameter name; zeros when nothing is scored. */
export async function gradients(
  context: PolicyContext,
  engine: TfjsTrainingEngine,
  batch: LogProbBatch,
  lossFn: LossFunction,
  updateOptions: UpdateOptions = {},
): Promise<{ value: number; gradients: Record<string, Float32Array> }> {
  await ensureReady(context);
  const computed = await computeGradients(context, engine, batch, lossFn, updateOptions);
  const out: Record<string, Float32Array> = {};
  context.state.model.parameters.forEach((p, k) => {
    const grad = computed?.grads[k];
    out[p.name] = grad ? (grad.dataSync() as Float32Array).slice() : new Float32Array(p.variable.size);
    grad?.dispose();
  });
  return { value: computed?.value ?? 0, gradients: out };
}

/** A fresh optimizer (zero moments, step 0) with the current settings and `overrides`. */
export function resetOptimizer(context: PolicyContext, overrides: Partial<AdamWSettings> = {}): void {
  const { state } = context;
  const settings = parseOptimizerSettings({ ...state.optimizer.settings, ...overrides }, 'resetOptimizer');
  state.optimizer.dispose();
  state.optimizer = new AdamW(state.model.parameters, settings);
}
