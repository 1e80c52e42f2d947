import * as tf from '@tensorflow/tfjs';
import type * as Ort from 'onnxruntime-node';
import { InvalidArgumentError } from '../../../core/errors';
import type { LogProbBatch, LossFunction } from '../../../ports/policy-backend';
import {
  buildTrainingGraph,
  createOnnxSession,
  encodeOnnxModel,
  ONNX_OPSET,
  type OnnxRuntime,
  cutGraph,
  TRAINING_NAMES,
} from '../onnx-graph/index';
import type { ComputedGradients, GradientPlan, TrainingEngine } from '../engine';
import { twoPassGradients } from '../two-pass';
import {
  gradientsOf,
  lossFeeds,
  createWorkerTrainer,
  laneError,
  type OnnxTrainer,
  stepOf,
  type OnnxTrainingForward,
  type TrainerGraphs,
} from './onnx-lanes';
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
  /** ONNX Runtime's intra-op threads (each lane's). */
  intraOpThreads: number;
  /**
   * Data-parallel lanes (default 1): an update's rows are split into this many parts, each run by
   * its own sessions, the first on the calling thread and the others on worker threads
   * (worker-lane.ts); their gradients are summed in row order.
   */
  lanes?: number;
  /** Kept activations held across one update at most (default KEPT_ACTIVATION_BYTES); for tests. */
  keptActivationBytes?: number;
}

/**
 * Kept activations held across one update at most (all chunks' forwards come before the first
 * backward): past it, a chunk's are dropped and its forward runs again before its backward, as
 * every chunk's did before the cut. 24 MB per layer for 8 rows of 256 tokens at width 128.
 */
const KEPT_ACTIVATION_BYTES = 1 << 30;

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

function trainerGraphs(ort: OnnxRuntime, model: Transformer, settings: OnnxTrainingSettings): TrainerGraphs {
  checkGraphWeights(model, 'onnx training');
  const training = buildTrainingGraph(graphConfigOf(model));
  const graphs = cutGraph(training, {
    forwardOutputs: [TRAINING_NAMES.tokenLogProbs, TRAINING_NAMES.entropySum],
    recomputable: RECOMPUTED_OPS,
    staticInputs: new Set(model.parameters.map((p) => p.name)),
    keep: new Set(training.saved),
    recompute: training.recomputed,
  });
  const gradientNames = model.parameters.map((p) => TRAINING_NAMES.gradient(p.name));
  // The last length's mask only: batches vary in length, and a mask per length up to the context
  // would keep context^3 / 3 floats.
  let mask: { length: number; tensor: Ort.Tensor } | null = null;
  const maskOf = (length: number) => {
    if (mask?.length !== length)
      mask = { length, tensor: new ort.Tensor('float32', causalMask(length), [length, length]) };
    return mask.tensor;
  };
  return {
    forwardModel: encodeOnnxModel(graphs.forward, ONNX_OPSET),
    backwardModel: encodeOnnxModel(graphs.backward, ONNX_OPSET),
    trainModel: encodeOnnxModel(training, ONNX_OPSET),
    // Threads sleep between operators: a training step's operators are large enough that waking
    // costs little, and spinning threads lose most of a shared machine's cores (see `spinning`).
    options: { intraOpThreads: settings.intraOpThreads, sequential: true, spinning: false },
    forwardOutputs: [TRAINING_NAMES.tokenLogProbs, TRAINING_NAMES.entropySum, ...graphs.saved],
    backwardReads: graphs.saved.filter((name) => graphs.backward.inputs.some((input) => input.name === name)),
    backwardOutputs: [...gradientNames, TRAINING_NAMES.tokenRowsGradient],
    gradientNames,
    tokenEmbedding: model.parameters.findIndex((p) => p.name === 'tokenEmbedding'),
    width: model.config.width,
    currentWeights: liveWeightFeeds(ort, model),
    batchFeeds(rows, positions, temperature) {
      // Right-padded ids and the scored places, as training.ts's denseBatch.
      const { length, places, targets } = scoredPlaces(rows, positions);
      const ids = new BigInt64Array(rows.length * length);
      rows.forEach((r, i) => r.forEach((id, t) => (ids[i * length + t] = BigInt(id))));
      return {
        [TRAINING_NAMES.ids]: new ort.Tensor('int64', ids, [rows.length, length]),
        [TRAINING_NAMES.mask]: maskOf(length),
        [TRAINING_NAMES.places]: new ort.Tensor('int64', BigInt64Array.from(places, BigInt), [places.length]),
        [TRAINING_NAMES.targets]: new ort.Tensor('int64', BigInt64Array.from(targets, BigInt), [
          targets.length,
        ]),
        [TRAINING_NAMES.temperature]: new ort.Tensor('float32', Float32Array.of(temperature), []),
      };
    },
  };
}

/** The lane on the calling thread: its two sessions run here. */
async function createOnnxTrainer(ort: OnnxRuntime, shared: TrainerGraphs): Promise<OnnxTrainer> {
  const forwardSession = await createOnnxSession(ort, shared.forwardModel, shared.options);
  const backwardSession = await createOnnxSession(ort, shared.backwardModel, shared.options);
  // Made at the first step: this lane never builds it for RL losses alone (a worker lane makes all
  // three sessions at its start).
  let trainSession: Promise<Ort.InferenceSession> | null = null;
  const forwardInputs = new Set(forwardSession.inputNames);
  const backwardInputs = new Set(backwardSession.inputNames);
  const { forwardOutputs, backwardOutputs } = shared;
  const only = (names: Set<string>, feeds: Record<string, Ort.Tensor>) =>
    Object.fromEntries(Object.entries(feeds).filter(([name]) => names.has(name)));
  const saved = forwardOutputs.slice(2);
  const keptOf = (results: Record<string, Ort.Tensor>) => {
    const kept = only(backwardInputs, Object.fromEntries(saved.map((name) => [name, results[name]!])));
    return {
      kept,
      keptBytes: Object.values(kept).reduce((n, t) => n + (t.data as Float32Array).byteLength, 0),
    };
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
      throw laneError(what, error);
    }
  };

  return {
    async forward(rows, positions, temperature, keep) {
      const inputs: Record<string, Ort.Tensor> = {
        ...shared.currentWeights(),
        ...shared.batchFeeds(rows, positions, temperature),
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
        { ...only(backwardInputs, forward.feeds), ...kept, ...lossFeeds(ort, upstream, entropyWeight) },
        'backward',
        backwardOutputs,
      );
      return gradientsOf(shared, results, forward.feeds);
    },
    async step(rows, positions, temperature, upstream, entropyWeight) {
      trainSession ??= createOnnxSession(ort, shared.trainModel, shared.options);
      const session = await trainSession.catch((error) => {
        trainSession = null;
        throw laneError('session build', error);
      });
      const feeds = shared.batchFeeds(rows, positions, temperature);
      const results = await run(
        session,
        { ...shared.currentWeights(), ...feeds, ...lossFeeds(ort, upstream, entropyWeight) },
        'forward and backward',
      );
      return stepOf(shared, results, feeds);
    },
    // What this lane keeps is in its forwards (`kept`), freed with them.
    release() {},
    reset() {},
    async dispose() {
      await forwardSession.release();
      await backwardSession.release();
      if (trainSession) await (await trainSession.catch(() => null))?.release();
    },
  };
}

/**
 * The ONNX Runtime training engine (`training: 'onnx'`): the gradients from the two sessions of
 * `createOnnxTrainer`, fed the live weights, on `settings.lanes` lanes (the calling thread's and
 * worker threads').
 */
export async function createOnnxTrainingEngine(
  ort: OnnxRuntime,
  model: Transformer,
  settings: OnnxTrainingSettings,
): Promise<TrainingEngine<tf.Tensor[]>> {
  const lanes = settings.lanes ?? 1;
  if (!(Number.isInteger(lanes) && lanes >= 1))
    throw new InvalidArgumentError({
      argument: 'lanes',
      message: `must be a positive integer, got ${String(lanes)}`,
    });
  const shared = trainerGraphs(ort, model, settings);
  const trainers: OnnxTrainer[] = [await createOnnxTrainer(ort, shared)];
  try {
    for (let k = 1; k < lanes; k++) trainers.push(await createWorkerTrainer(ort, shared));
  } catch (error) {
    await Promise.all(trainers.map((t) => t.dispose()));
    throw laneError(
      'worker start (trainingLanes 1 trains on the calling thread alone: policy.trainingLanes in a run configuration)',
      error,
    );
  }
  const keptBudget = settings.keptActivationBytes ?? KEPT_ACTIVATION_BYTES;
  return {
    computeGradients: (batch, lossFn, plan) =>
      computeOnnxGradients(trainers, model, batch, lossFn, plan, keptBudget),
    dispose: async () => {
      await Promise.all(trainers.map((t) => t.dispose()));
    },
  };
}

/** Each chunk cut into up to `parts` runs of consecutive rows (the lanes' shares), in order. */
function laneChunks(chunks: readonly number[][], parts: number): number[][] {
  if (parts <= 1) return chunks.map((c) => [...c]);
  return chunks.flatMap((chunk) => {
    const n = Math.min(parts, chunk.length);
    return Array.from({ length: n }, (_, k) =>
      chunk.slice(Math.floor((k * chunk.length) / n), Math.floor(((k + 1) * chunk.length) / n)),
    );
  });
}

/**
 * The gradients through ONNX Runtime, in two runs a chunk (two-pass.ts): every chunk's forward gives
 * the loss its log-probs and keeps the activations the backward reads (up to KEPT_ACTIVATION_BYTES
 * over the update, decided before each forward), then per chunk one backward run fed the loss's g;
 * a loss declaring its constant gradient (SFT's) runs one run a chunk of the uncut graph instead
 * (`OnnxTrainer.step`). With more than one lane, each chunk is cut into the lanes' shares, which run side by side; the
 * chunks' gradients are summed in chunk order whatever order they arrive in.
 */
async function computeOnnxGradients(
  trainers: readonly OnnxTrainer[],
  model: Transformer,
  batch: LogProbBatch,
  lossFn: LossFunction,
  plan: GradientPlan,
  keptBudget: number,
): Promise<ComputedGradients<tf.Tensor[]>> {
  const parameters = model.parameters;
  const chunks = laneChunks(plan.chunks, trainers.length);
  let accumulated: Float32Array[] | null = null;
  const arrived = new Map<number, Float32Array[]>();
  let issued = 0;
  let next = 0;
  /**
   * The runs' gradients, summed in the order the runs were asked for whatever order they arrive
   * in (a chunk may run twice: an anticipated gradient's correction).
   */
  const arrive = (run: number, gradients: Float32Array[]) => {
    arrived.set(run, gradients);
    for (let grads = arrived.get(next); grads; grads = arrived.get(next)) {
      arrived.delete(next++);
      if (!accumulated) accumulated = grads;
      else
        grads.forEach((grad, k) => {
          const sum = accumulated![k]!;
          for (let j = 0; j < grad.length; j++) sum[j]! += grad[j]!;
        });
    }
  };
  let outcome: Awaited<ReturnType<typeof twoPassGradients>>;
  try {
    outcome = await twoPassGradients<OnnxTrainingForward>(
      {
        tokens: (chunk) => chunk.length * Math.max(...chunk.map((i) => batch.inputIds[i]!.length)),
        forward: (chunk, keep, lane) =>
          trainers[lane]!.forward(
            chunk.map((i) => batch.inputIds[i]!),
            chunk.map((i) => batch.positions[i]!),
            plan.temperature,
            keep,
          ),
        async backward(_chunk, forward, upstream, entropyWeight, lane) {
          const run = issued++;
          arrive(run, await trainers[lane]!.gradients(forward, upstream, entropyWeight));
        },
        release: (forward, lane) => trainers[lane]!.release(forward),
        async fused(chunk, upstream, entropyWeight, lane) {
          const run = issued++;
          const step = await trainers[lane]!.step(
            chunk.map((i) => batch.inputIds[i]!),
            chunk.map((i) => batch.positions[i]!),
            plan.temperature,
            upstream,
            entropyWeight,
          );
          arrive(run, step.gradients);
          return step;
        },
      },
      batch,
      lossFn,
      { ...plan, chunks },
      { keptActivationBytes: keptBudget, provider: 'tfjs', lanes: trainers.length },
    );
  } catch (error) {
    // An abort, a refused loss or a failed run between the forwards and the backwards: nothing the
    // workers kept for this update will be read.
    for (const trainer of trainers) trainer.reset();
    throw error;
  }
  return {
    grads: accumulated!.map((sum, k) => tf.tensor(sum, parameters[k]!.variable.shape)),
    ...outcome,
  };
}
