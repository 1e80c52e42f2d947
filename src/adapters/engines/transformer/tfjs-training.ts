import * as tf from '@tensorflow/tfjs';
import { AbortedError } from '../../../core/errors';
import type { LogProbBatch, LossFunction } from '../../../ports/policy-backend';
import { checkLossOutput } from '../../../rollout-engine/batch-checks';
import type { ComputedGradients, GradientPlan, TrainingEngine } from '../engine';
import { denseBatch, scoredLogProbs } from './scored-places';
import type { Transformer } from './transformer';

/**
 * The tfjs training engine (the default, `training: 'tfjs'`): one forward and one backward per row
 * chunk, by tfjs's autodiff over the model's variables. The loss needs every sequence's new
 * log-probs at once (GSPO, seq-mean aggregations), so a batch over the memory bound takes one extra
 * forward to read them first.
 */
export function createTfjsTrainingEngine(model: Transformer): TrainingEngine<tf.Tensor[]> {
  return {
    computeGradients: (batch, lossFn, plan) => computeGradients(model, batch, lossFn, plan),
    dispose: async () => {},
  };
}

/**
 * The scored log-probs of every row, forward only, a chunk of rows a forward (the loss's input
 * when it spans several chunks, and the policy's `logProbs`); `what` was aborted between chunks.
 */
export function chunkedLogProbs(
  model: Transformer,
  batch: LogProbBatch,
  chunks: readonly number[][],
  temperature: number,
  abort: { what: string; signal?: AbortSignal | undefined },
): number[][] {
  const out: number[][] = batch.positions.map(() => []);
  for (const chunk of chunks) {
    if (abort.signal?.aborted) throw new AbortedError({ what: abort.what, cause: abort.signal.reason });
    const rows = chunk.map((i) => batch.inputIds[i]!);
    const positions = chunk.map((i) => batch.positions[i]!);
    const token = tf.tidy(() => {
      const dense = denseBatch(rows, positions, model.config.vocabSize);
      return scoredLogProbs(
        model.forwardFull(dense.ids, dense.idValues, dense.places),
        dense.pick,
        temperature,
      ).token;
    });
    const data = token.dataSync() as Float32Array;
    token.dispose();
    let k = 0;
    for (const i of chunk) out[i] = batch.positions[i]!.map(() => data[k++]!);
  }
  return out;
}

const checkLoss = (result: ReturnType<LossFunction>, batch: LogProbBatch) =>
  checkLossOutput(result, batch, 'tfjs');

async function computeGradients(
  model: Transformer,
  batch: LogProbBatch,
  lossFn: LossFunction,
  plan: GradientPlan,
): Promise<ComputedGradients<tf.Tensor[]>> {
  const modelConfig = model.config;
  const { chunks, temperature, entropyCoef, scored } = plan;
  let lossValue = 0;
  let metrics: Record<string, number> = {};
  let entropySum = 0;
  let gradNew: number[][] | null = null;
  if (chunks.length > 1) {
    const result = checkLoss(
      lossFn(chunkedLogProbs(model, batch, chunks, temperature, { what: 'update', signal: plan.signal })),
      batch,
    );
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
        const { grads: named } = tf.variableGrads(
          () => {
            const { logp, token } = scoredLogProbs(
              model.forwardFull(dense.ids, dense.idValues, dense.places),
              dense.pick,
              temperature,
            );
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
            if (entropyCoef > 0)
              objective = tf.sub(objective, tf.mul(entropySumTensor, entropyCoef / scored));
            return objective as tf.Scalar;
          },
          model.parameters.map((p) => p.variable),
        );
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
