import * as tf from '@tensorflow/tfjs';
import { AbortedError, InvalidArgumentError, PortOutputError } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import type { LogProbBatch, LossFunction, UpdateOptions, UpdateResult } from '../../ports/policy-backend';
import { AdamW, type AdamWSettings } from './adamw';
import type { OnnxTrainer, OnnxTrainingForward } from './onnx-training';
import { scoredPlaces } from './scored-places';
import { parseOptimizerSettings } from './settings';
import { ensureReady, type PolicyContext } from './state';
import type { TransformerConfig } from './transformer';

/** Checks a batch against the model; returns the temperature to score at (greedy, 0, scores at 1). */
function checkBatch(batch: LogProbBatch, modelConfig: TransformerConfig): number {
  const { contextLength, vocabSize } = modelConfig;
  if (!batch || !Array.isArray(batch.inputIds) || !Array.isArray(batch.positions) || batch.inputIds.length !== batch.positions.length) {
    throw new InvalidArgumentError('batch', 'needs inputIds and positions arrays of the same length');
  }
  batch.inputIds.forEach((ids, i) => {
    if (ids.length > contextLength) throw new InvalidArgumentError(`batch.inputIds[${i}]`, `has ${ids.length} tokens; the model's context is ${contextLength}`);
    ids.forEach((id, t) => {
      if (!(Number.isInteger(id) && id >= 0 && id < vocabSize)) throw new InvalidArgumentError(`batch.inputIds[${i}][${t}]`, `token id ${id} is outside the vocabulary (0..${vocabSize - 1})`);
    });
    batch.positions[i]!.forEach((p, k) => {
      if (!(Number.isInteger(p) && p >= 1 && p < ids.length)) throw new InvalidArgumentError(`batch.positions[${i}][${k}]`, `must be in 1..${ids.length - 1}, got ${p}`);
    });
  });
  const temperature = batch.temperature ?? 1;
  if (!(Number.isFinite(temperature) && temperature >= 0)) throw new InvalidArgumentError('batch.temperature', `must be >= 0, got ${temperature}`);
  return temperature === 0 ? 1 : temperature;
}

/**
 * Right-padded ids, the scored places (`scoredPlaces`) and a one-hot [places, vocabulary] of their
 * tokens. Only these places get logits (`forwardFull`'s `scoredRows`).
 */
function denseBatch(rows: number[][], positions: number[][], vocabSize: number) {
  const rowCount = rows.length;
  const { length, places, targets } = scoredPlaces(rows, positions);
  const ids = new Int32Array(rowCount * length);
  rows.forEach((r, i) => ids.set(r, i * length));
  // The one-hot is made on the device, not shipped.
  return { ids: tf.tensor2d(ids, [rowCount, length], 'int32'), idValues: ids, places, pick: tf.oneHot(tf.tensor1d(targets, 'int32'), vocabSize) as tf.Tensor2D, length };
}

/** Log-probs at a temperature and, per place, the one of the picked token (0 where nothing is picked). */
function scoredLogProbs(logits: tf.Tensor2D, pick: tf.Tensor2D, temperature: number) {
  const logp = tf.logSoftmax(temperature !== 1 ? tf.div(logits, temperature) : logits);
  return { logp, token: tf.sum(tf.mul(logp, pick), 1) };
}

/** Row indices grouped into forwards whose attention scores (rows * heads * length^2) stay under the memory bound. */
function rowChunks(batch: LogProbBatch, heads: number, maxAttentionElements: number): number[][] {
  const chunks: number[][] = [];
  let current: number[] = [];
  let longest = 0;
  batch.inputIds.forEach((ids, i) => {
    const nextLongest = Math.max(longest, ids.length);
    if (current.length > 0 && (current.length + 1) * heads * nextLongest * nextLongest > maxAttentionElements) {
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

function checkLoss(result: ReturnType<LossFunction>, batch: LogProbBatch): ReturnType<LossFunction> {
  if (!result || !Array.isArray(result.gradNewLogProbs) || result.gradNewLogProbs.length !== batch.positions.length) {
    throw new PortOutputError({ port: 'policy', provider: 'tfjs', field: 'lossFn().gradNewLogProbs', message: 'must have one row per sequence of the batch' });
  }
  result.gradNewLogProbs.forEach((row, i) => {
    if (!Array.isArray(row) || row.length !== batch.positions[i]!.length) {
      throw new PortOutputError({ port: 'policy', provider: 'tfjs', field: `lossFn().gradNewLogProbs[${i}]`, message: `must have ${batch.positions[i]!.length} entries (one per scored position)` });
    }
  });
  return result;
}

export async function logProbs(context: PolicyContext, batch: LogProbBatch, callOptions?: CallOptions): Promise<number[][]> {
  await ensureReady(context);
  const { modelConfig, settings, state } = context;
  const temperature = checkBatch(batch, modelConfig);
  const out: number[][] = batch.positions.map(() => []);
  for (const chunk of rowChunks(batch, modelConfig.heads, settings.maxAttentionElements)) {
    if (callOptions?.signal?.aborted) throw new AbortedError('logProbs', { cause: callOptions.signal.reason });
    const rows = chunk.map((i) => batch.inputIds[i]!);
    const positions = chunk.map((i) => batch.positions[i]!);
    const token = tf.tidy(() => {
      const dense = denseBatch(rows, positions, modelConfig.vocabSize);
      return scoredLogProbs(state.model.forwardFull(dense.ids, dense.idValues, dense.places), dense.pick, temperature).token;
    });
    const data = token.dataSync() as Float32Array;
    token.dispose();
    let k = 0;
    for (const i of chunk) out[i] = batch.positions[i]!.map(() => data[k++]!);
  }
  return out;
}

interface ComputedGradients {
  /** One per model parameter, in `model.parameters` order; the caller disposes them. */
  grads: tf.Tensor[];
  value: number;
  metrics: Record<string, number>;
  /** Mean entropy over the scored positions. */
  entropy: number;
}

/**
 * Gradients of sum_t g_t * logp_t (minus the entropy bonus) with g from the core's loss: one
 * forward and one backward per row chunk. The loss needs every sequence's new log-probs at once
 * (GSPO, seq-mean aggregations), so a batch over the memory bound takes one extra forward to read
 * them first. `null` when nothing is scored.
 */
async function computeGradients(context: PolicyContext, batch: LogProbBatch, lossFn: LossFunction, updateOptions: UpdateOptions): Promise<ComputedGradients | null> {
  const { modelConfig, settings } = context;
  const model = context.state.model;
  const temperature = checkBatch(batch, modelConfig);
  const entropyCoef = updateOptions.entropyCoef ?? 0;
  if (!(Number.isFinite(entropyCoef) && entropyCoef >= 0)) throw new InvalidArgumentError('entropyCoef', `must be >= 0, got ${entropyCoef}`);
  if (updateOptions.signal?.aborted) throw new AbortedError('update', { cause: updateOptions.signal.reason });
  const scored = batch.positions.reduce((n, row) => n + row.length, 0);
  if (scored === 0) return null;
  const chunks = rowChunks(batch, modelConfig.heads, settings.maxAttentionElements);
  if (context.onnxTrainer) return computeOnnxGradients(context.onnxTrainer, context, batch, lossFn, { chunks, temperature, entropyWeight: entropyCoef / scored, scored, signal: updateOptions.signal });
  let lossValue = 0;
  let metrics: Record<string, number> = {};
  let entropySum = 0;
  let gradNew: number[][] | null = null;
  if (chunks.length > 1) {
    const result = checkLoss(lossFn(await logProbs(context, batch, updateOptions)), batch);
    gradNew = result.gradNewLogProbs;
    lossValue = result.value;
    metrics = result.metrics ?? {};
  }
  const accumulated: tf.Tensor[] = model.parameters.map((p) => tf.zerosLike(p.variable) as tf.Tensor);
  try {
    for (const chunk of chunks) {
      const rows = chunk.map((i) => batch.inputIds[i]!);
      const positions = chunk.map((i) => batch.positions[i]!);
      const { grads, entropy } = tf.tidy(() => {
        const dense = denseBatch(rows, positions, modelConfig.vocabSize);
        let chunkEntropy = 0;
        const { grads: named } = tf.variableGrads(() => {
          const { logp, token } = scoredLogProbs(model.forwardFull(dense.ids, dense.idValues, dense.places), dense.pick, temperature);
          let weights = gradNew && chunk.map((i) => gradNew![i]!);
          if (!weights) {
            // One chunk: the loss reads this forward's log-probs, saving the extra forward.
            const values = token.dataSync() as Float32Array;
            let at = 0;
            const newLogProbs = positions.map((row) => row.map(() => values[at++]!));
            const result = checkLoss(lossFn(newLogProbs), batch);
            lossValue = result.value;
            metrics = result.metrics ?? {};
            weights = result.gradNewLogProbs;
          }
          const g = new Float32Array(dense.places.length);
          let at = 0;
          positions.forEach((row, k) => row.forEach((_, t) => (g[at++] = weights![k]![t]!)));
          // d/dtheta of sum_t g_t * logp_t is the policy gradient of the core's loss.
          let objective = tf.sum(tf.mul(token, tf.tensor1d(g)));
          // Every place is a scored one, so the entropy sums over all of them.
          const entropySumTensor = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp)));
          chunkEntropy = entropySumTensor.dataSync()[0]!;
          if (entropyCoef > 0) objective = tf.sub(objective, tf.mul(entropySumTensor, entropyCoef / scored));
          return objective as tf.Scalar;
        }, model.parameters.map((p) => p.variable));
        return { grads: model.parameters.map((p) => named[p.variable.name]!), entropy: chunkEntropy };
      });
      entropySum += entropy;
      accumulated.forEach((acc, k) => {
        accumulated[k] = tf.add(acc, grads[k]!);
        acc.dispose();
        grads[k]!.dispose();
      });
    }
  } catch (error) {
    for (const t of accumulated) t.dispose();
    throw error;
  }
  return { grads: accumulated, value: lossValue, metrics, entropy: entropySum / scored };
}

/**
 * `computeGradients` through ONNX Runtime (`training: 'onnx'`): every chunk's forward gives the
 * loss its log-probs, then per chunk one forward + backward run fed the loss's g. The training
 * run recomputes its forward, so nothing but the (small) feeds is kept between the two.
 */
async function computeOnnxGradients(
  trainer: OnnxTrainer,
  context: PolicyContext,
  batch: LogProbBatch,
  lossFn: LossFunction,
  plan: { chunks: number[][]; temperature: number; entropyWeight: number; scored: number; signal?: AbortSignal },
): Promise<ComputedGradients> {
  const { chunks, temperature, entropyWeight, scored, signal } = plan;
  const parameters = context.state.model.parameters;
  const checkAbort = () => {
    if (signal?.aborted) throw new AbortedError('update', { cause: signal.reason });
  };
  const newLogProbs: number[][] = batch.positions.map(() => []);
  const forwards: OnnxTrainingForward[] = [];
  let entropySum = 0;
  for (const chunk of chunks) {
    checkAbort();
    const forward = await trainer.forward(chunk.map((i) => batch.inputIds[i]!), chunk.map((i) => batch.positions[i]!), temperature);
    let at = 0;
    for (const i of chunk) newLogProbs[i] = batch.positions[i]!.map(() => forward.tokenLogProbs[at++]!);
    entropySum += forward.entropySum;
    forwards.push(forward);
  }
  const loss = checkLoss(lossFn(newLogProbs), batch);
  const accumulated = parameters.map((p) => new Float32Array(p.variable.size));
  for (const [c, chunk] of chunks.entries()) {
    checkAbort();
    const upstream = Float32Array.from(chunk.flatMap((i) => loss.gradNewLogProbs[i]!));
    const grads = await trainer.gradients(forwards[c]!, upstream, entropyWeight);
    grads.forEach((grad, k) => {
      const sum = accumulated[k]!;
      for (let j = 0; j < grad.length; j++) sum[j]! += grad[j]!;
    });
  }
  return {
    grads: accumulated.map((sum, k) => tf.tensor(sum, parameters[k]!.variable.shape)),
    value: loss.value,
    metrics: loss.metrics ?? {},
    entropy: entropySum / scored,
  };
}

export async function update(context: PolicyContext, batch: LogProbBatch, lossFn: LossFunction, updateOptions: UpdateOptions = {}): Promise<UpdateResult> {
  await ensureReady(context);
  const computed = await computeGradients(context, batch, lossFn, updateOptions);
  if (computed === null) return { value: 0, gradNorm: 0, applied: false, skippedReason: 'no positions to score' };
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
export async function gradients(context: PolicyContext, batch: LogProbBatch, lossFn: LossFunction, updateOptions: UpdateOptions = {}): Promise<{ value: number; gradients: Record<string, Float32Array> }> {
  await ensureReady(context);
  const computed = await computeGradients(context, batch, lossFn, updateOptions);
  const out: Record<string, Float32Array> = {};
  context.state.model.parameters.forEach((p, k) => {
    out[p.name] = computed ? (computed.grads[k]!.dataSync() as Float32Array).slice() : new Float32Array(p.variable.size);
    computed?.grads[k]!.dispose();
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
