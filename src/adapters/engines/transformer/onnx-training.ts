import * as tf from '@tensorflow/tfjs';
import type * as Ort from 'onnxruntime-node';
import { ProviderCallError } from '../../../core/errors';
import type { LogProbBatch, LossFunction } from '../../../ports/policy-backend';
import {
  buildTrainingGraph,
  createOnnxSession,
  encodeOnnxModel,
  ONNX_OPSET,
  type OnnxRuntime,
  type OnnxSessionOptions,
  cutGraph,
  TRAINING_NAMES,
} from '../onnx-graph/index';
import type { ComputedGradients, GradientPlan, TrainingEngine } from '../engine';
import { type TwoPassForward, twoPassGradients } from '../two-pass';
import { checkGraphWeights, graphConfigOf, liveWeightFeeds } from './onnx-weights';
import { scoredPlaces } from './scored-places';
import { MASKED, type Transformer } from './transformer';

// Gradients of the tfjs Transformer computed by ONNX Runtime (`training: 'onnx'`): one session
// of the forward (the log-probs for the loss, and the activations the backward keeps) and one of
// the backward (the gradients given the loss's g), the training graph of
// ../onnx-graph/training-graph.ts cut in two by cutGraph (graph-split.ts), as the Llama
// engine cuts its own. The weights are fed from
// the tfjs variables, rebuilt when an update or a load has replaced them; AdamW stays on tfjs
// (training.ts), so the optimizer state is the same either way.

export interface OnnxTrainingSettings {
  /** ONNX Runtime's intra-op threads. */
  intraOpThreads: number;
  /** Kept activations held across one update at most (default KEPT_ACTIVATION_BYTES); for tests. */
  keptActivationBytes?: number;
}

/**
 * Kept activations held across one update at most (all chunks' forwards come before the first
 * backward): past it, a chunk's are dropped and its forward runs again before its backward, as
 * every chunk's did before the cut. 24 MB per layer for 8 rows of 256 tokens at width 128.
 */
const KEPT_ACTIVATION_BYTES = 1 << 30;

/** One row chunk's forward: its scored log-probs and entropy sum, and the feeds its gradients need. */
export interface OnnxTrainingForward extends TwoPassForward {
  /** In the order of the chunk's positions, row by row. */
  tokenLogProbs: Float32Array;
  entropySum: number;
  /** The forward's inputs. */
  readonly feeds: Record<string, Ort.Tensor>;
  /** The activations the backward reads; null once dropped (the backward runs the forward again). */
  kept: Record<string, Ort.Tensor> | null;
  keptBytes: number;
}

interface OnnxTrainer {
  /** `keep` false: only the log-probs and the entropy sum are fetched (no activations copied out). */
  forward(
    rows: number[][],
    positions: number[][],
    temperature: number,
    keep: boolean,
  ): Promise<OnnxTrainingForward>;
  /**
   * The gradient of sum_t upstream_t * logp_t - entropyWeight * (entropy sum) by each weight, in
   * `model.parameters` order, at the weights `forward` saw (one run of forward + backward).
   */
  gradients(
    forward: OnnxTrainingForward,
    upstream: Float32Array,
    entropyWeight: number,
  ): Promise<Float32Array[]>;
  dispose(): Promise<void>;
}

/**
 * What the backward computes again from kept activations instead of fetching them: shape ops, layer
 * norms and elementwise products, cheap next to a copy out of ONNX Runtime; matrix products, sums
 * and softmaxes are kept, except the attention weights the graph names as `recomputed`.
 */
const RECOMPUTED_OPS = new Set([
  'Slice',
  'Concat',
  'Reshape',
  'Transpose',
  'LayerNormalization',
  'Mul',
  'Exp',
]);

function causalMask(length: number): Float32Array {
  const data = new Float32Array(length * length);
  for (let i = 0; i < length; i++) data.fill(MASKED, i * length + i + 1, (i + 1) * length);
  return data;
}

async function createOnnxTrainer(
  ort: OnnxRuntime,
  model: Transformer,
  settings: OnnxTrainingSettings,
): Promise<OnnxTrainer> {
  checkGraphWeights(model, 'onnx training');
  const training = buildTrainingGraph(graphConfigOf(model));
  const graphs = cutGraph(training, {
    forwardOutputs: [TRAINING_NAMES.tokenLogProbs, TRAINING_NAMES.entropySum],
    recomputable: RECOMPUTED_OPS,
    staticInputs: new Set(model.parameters.map((p) => p.name)),
    keep: new Set(training.saved),
    recompute: training.recomputed,
  });
  // Threads sleep between operators: a training step's operators are large enough that waking
  // costs little, and spinning threads lose most of a shared machine's cores (see `spinning`).
  const options: OnnxSessionOptions = {
    intraOpThreads: settings.intraOpThreads,
    sequential: true,
    spinning: false,
  };
  const forwardSession = await createOnnxSession(ort, encodeOnnxModel(graphs.forward, ONNX_OPSET), options);
  const backwardSession = await createOnnxSession(ort, encodeOnnxModel(graphs.backward, ONNX_OPSET), options);
  const gradientNames = model.parameters.map((p) => TRAINING_NAMES.gradient(p.name));
  const backwardOutputs = [...gradientNames, TRAINING_NAMES.tokenRowsGradient];
  const tokenEmbedding = model.parameters.findIndex((p) => p.name === 'tokenEmbedding');
  const width = model.config.width;
  const forwardInputs = new Set(forwardSession.inputNames);
  const backwardInputs = new Set(backwardSession.inputNames);
  const forwardOutputs = [TRAINING_NAMES.tokenLogProbs, TRAINING_NAMES.entropySum, ...graphs.saved];
  const only = (names: Set<string>, feeds: Record<string, Ort.Tensor>) =>
    Object.fromEntries(Object.entries(feeds).filter(([name]) => names.has(name)));
  const keptOf = (results: Record<string, Ort.Tensor>) => {
    const kept = only(backwardInputs, Object.fromEntries(graphs.saved.map((name) => [name, results[name]!])));
    return {
      kept,
      keptBytes: Object.values(kept).reduce((n, t) => n + (t.data as Float32Array).byteLength, 0),
    };
  };

  const currentWeights = liveWeightFeeds(ort, model);
  // The last length's mask only: batches vary in length, and a mask per length up to the context
  // would keep context^3 / 3 floats.
  let mask: { length: number; tensor: Ort.Tensor } | null = null;
  const maskOf = (length: number) => {
    if (mask?.length !== length)
      mask = { length, tensor: new ort.Tensor('float32', causalMask(length), [length, length]) };
    return mask.tensor;
  };
  const run = async (
    session: Ort.InferenceSession,
    feeds: Record<string, Ort.Tensor>,
    what: string,
    fetches?: string[],
  ) => {
    try {
      return await (fetches ? session.run(feeds, fetches) : session.run(feeds));
    } catch (error) {
      throw new ProviderCallError({
        port: 'policy',
        provider: 'tfjs',
        message: `ONNX Runtime training ${what} failed: ${error instanceof Error ? error.message : String(error)}`,
        isRetryable: false,
        cause: error,
      });
    }
  };

  return {
    async forward(rows, positions, temperature, keep) {
      // Right-padded ids and the scored places, as training.ts's denseBatch.
      const { length, places, targets } = scoredPlaces(rows, positions);
      const ids = new BigInt64Array(rows.length * length);
      rows.forEach((r, i) => r.forEach((id, t) => (ids[i * length + t] = BigInt(id))));
      const inputs: Record<string, Ort.Tensor> = {
        ...currentWeights(),
        [TRAINING_NAMES.ids]: new ort.Tensor('int64', ids, [rows.length, length]),
        [TRAINING_NAMES.mask]: maskOf(length),
        [TRAINING_NAMES.places]: new ort.Tensor('int64', BigInt64Array.from(places, BigInt), [places.length]),
        [TRAINING_NAMES.targets]: new ort.Tensor('int64', BigInt64Array.from(targets, BigInt), [
          targets.length,
        ]),
        [TRAINING_NAMES.temperature]: new ort.Tensor('float32', Float32Array.of(temperature), []),
      };
      const results = await run(
        forwardSession,
        only(forwardInputs, inputs),
        'forward',
        keep ? forwardOutputs : forwardOutputs.slice(0, 2),
      );
      return {
        tokenLogProbs: results[TRAINING_NAMES.tokenLogProbs]!.data as Float32Array,
        entropySum: (results[TRAINING_NAMES.entropySum]!.data as Float32Array)[0]!,
        feeds: inputs,
        ...(keep ? keptOf(results) : { kept: null, keptBytes: 0 }),
      };
    },
    async gradients(forward, upstream, entropyWeight) {
      const kept =
        forward.kept ??
        keptOf(await run(forwardSession, only(forwardInputs, forward.feeds), 'forward', forwardOutputs)).kept;
      const results = await run(
        backwardSession,
        {
          ...only(backwardInputs, forward.feeds),
          ...kept,
          [TRAINING_NAMES.upstream]: new ort.Tensor('float32', upstream, [upstream.length]),
          [TRAINING_NAMES.entropyWeight]: new ort.Tensor('float32', Float32Array.of(entropyWeight), []),
        },
        'backward',
        backwardOutputs,
      );
      const gradients = gradientNames.map((name) => results[name]!.data as Float32Array);
      // The input gather's part of the token embedding's gradient: each token's row added at its id
      // (the graph leaves it out: see TRAINING_NAMES.tokenRowsGradient).
      const rows = results[TRAINING_NAMES.tokenRowsGradient]!.data as Float32Array;
      const ids = forward.feeds[TRAINING_NAMES.ids]!.data as BigInt64Array;
      const embedding = gradients[tokenEmbedding]!;
      for (let t = 0; t < ids.length; t++) {
        const at = Number(ids[t]) * width;
        const from = t * width;
        for (let j = 0; j < width; j++) embedding[at + j]! += rows[from + j]!;
      }
      return gradients;
    },
    async dispose() {
      await forwardSession.release();
      await backwardSession.release();
    },
  };
}

/**
 * The ONNX Runtime training engine (`training: 'onnx'`): the gradients from the two sessions of
 * `createOnnxTrainer`, fed the live weights.
 */
export async function createOnnxTrainingEngine(
  ort: OnnxRuntime,
  model: Transformer,
  settings: OnnxTrainingSettings,
): Promise<TrainingEngine<tf.Tensor[]>> {
  const trainer = await createOnnxTrainer(ort, model, settings);
  const keptBudget = settings.keptActivationBytes ?? KEPT_ACTIVATION_BYTES;
  return {
    computeGradients: (batch, lossFn, plan) =>
      computeOnnxGradients(trainer, model, batch, lossFn, plan, keptBudget),
    dispose: () => trainer.dispose(),
  };
}

/**
 * The gradients through ONNX Runtime, in two runs a chunk (two-pass.ts): every chunk's forward gives
 * the loss its log-probs and keeps the activations the backward reads (up to KEPT_ACTIVATION_BYTES
 * over the update, decided before each forward), then per chunk one backward run fed the loss's g.
 */
async function computeOnnxGradients(
  trainer: OnnxTrainer,
  model: Transformer,
  batch: LogProbBatch,
  lossFn: LossFunction,
  plan: GradientPlan,
  keptBudget: number,
): Promise<ComputedGradients<tf.Tensor[]>> {
  const parameters = model.parameters;
  let accumulated: Float32Array[] | null = null;
  const outcome = await twoPassGradients<OnnxTrainingForward>(
    {
      tokens: (chunk) => chunk.length * Math.max(...chunk.map((i) => batch.inputIds[i]!.length)),
      forward: (chunk, keep) =>
        trainer.forward(
          chunk.map((i) => batch.inputIds[i]!),
          chunk.map((i) => batch.positions[i]!),
          plan.temperature,
          keep,
        ),
      async backward(_chunk, forward, upstream, entropyWeight) {
        const grads = await trainer.gradients(forward, upstream, entropyWeight);
        if (!accumulated) accumulated = grads;
        else
          grads.forEach((grad, k) => {
            const sum = accumulated![k]!;
            for (let j = 0; j < grad.length; j++) sum[j]! += grad[j]!;
          });
      },
    },
    batch,
    lossFn,
    plan,
    { keptActivationBytes: keptBudget, provider: 'tfjs' },
  );
  return {
    grads: accumulated!.map((sum, k) => tf.tensor(sum, parameters[k]!.variable.shape)),
    ...outcome,
  };
}
