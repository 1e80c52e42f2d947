import type * as Ort from 'onnxruntime-node';
import { ProviderCallError } from '../../core/errors';
import { ONNX_OPSET, transformerWeightShapes } from './onnx-graph';
import { encodeOnnxModel } from './onnx-proto';
import type { OnnxRuntime } from './onnx-rollouts';
import { buildTrainingGraph, forwardOnlyGraph, TRAINING_NAMES } from './onnx-training-graph';
import { MASKED, type Transformer } from './transformer';

// Gradients of the tfjs Transformer computed by ONNX Runtime (`training: 'onnx'`): one session
// of the forward alone (the log-probs for the loss) and one of forward + backward (the gradients
// given the loss's g), both built in onnx-training-graph.ts. The weights are fed from the tfjs variables, rebuilt when an update or a load has
// replaced them; AdamW stays on tfjs (training.ts), so the optimizer state is the same either way.

export interface OnnxTrainingSettings {
  /** ONNX Runtime's intra-op threads. */
  intraOpThreads: number;
}

/** One row chunk's forward: its scored log-probs and entropy sum, and the feeds its gradients need. */
export interface OnnxTrainingForward {
  /** In the order of the chunk's positions, row by row. */
  tokenLogProbs: Float32Array;
  entropySum: number;
  readonly feeds: Record<string, Ort.Tensor>;
}

export interface OnnxTrainer {
  forward(rows: number[][], positions: number[][], temperature: number): Promise<OnnxTrainingForward>;
  /**
   * The gradient of sum_t upstream_t * logp_t - entropyWeight * (entropy sum) by each weight, in
   * `model.parameters` order, at the weights `forward` saw (one run of forward + backward).
   */
  gradients(forward: OnnxTrainingForward, upstream: Float32Array, entropyWeight: number): Promise<Float32Array[]>;
  dispose(): Promise<void>;
}

function causalMask(length: number): Float32Array {
  const data = new Float32Array(length * length);
  for (let i = 0; i < length; i++) data.fill(MASKED, i * length + i + 1, (i + 1) * length);
  return data;
}

export async function createOnnxTrainer(ort: OnnxRuntime, model: Transformer, settings: OnnxTrainingSettings): Promise<OnnxTrainer> {
  const expected = transformerWeightShapes(model.config);
  if (expected.length !== model.parameters.length || model.parameters.some((p, i) => p.name !== expected[i]!.name)) {
    throw new Error('onnx training: the ONNX graph\'s weights do not match the Transformer\'s parameters');
  }
  const graph = buildTrainingGraph(model.config);
  const options: Ort.InferenceSession.SessionOptions = { intraOpNumThreads: settings.intraOpThreads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' };
  const forwardSession = await ort.InferenceSession.create(encodeOnnxModel(forwardOnlyGraph(graph), ONNX_OPSET), options);
  const trainingSession = await ort.InferenceSession.create(encodeOnnxModel(graph, ONNX_OPSET), options);
  const gradientNames = model.parameters.map((p) => TRAINING_NAMES.gradient(p.name));
  const forwardInputs = new Set(forwardSession.inputNames);
  const trainingInputs = new Set(trainingSession.inputNames);
  const only = (names: Set<string>, feeds: Record<string, Ort.Tensor>) => Object.fromEntries(Object.entries(feeds).filter(([name]) => names.has(name)));

  // tfjs's assign gives a variable a new data id: the feeds are rebuilt only then.
  let weightIds: unknown[] = [];
  let weightFeeds: Record<string, Ort.Tensor> = {};
  const currentWeights = () => {
    const ids = model.parameters.map((p) => p.variable.dataId);
    if (ids.length === weightIds.length && ids.every((id, i) => id === weightIds[i])) return weightFeeds;
    weightFeeds = Object.fromEntries(model.parameters.map((p) => [p.name, new ort.Tensor('float32', (p.variable.dataSync() as Float32Array).slice(), p.variable.shape)]));
    weightIds = ids;
    return weightFeeds;
  };
  // The last length's mask only: batches vary in length, and a mask per length up to the context
  // would keep context^3 / 3 floats.
  let mask: { length: number; tensor: Ort.Tensor } | null = null;
  const maskOf = (length: number) => {
    if (mask?.length !== length) mask = { length, tensor: new ort.Tensor('float32', causalMask(length), [length, length]) };
    return mask.tensor;
  };
  const run = async (session: Ort.InferenceSession, feeds: Record<string, Ort.Tensor>, what: string, fetches?: string[]) => {
    try {
      return await (fetches ? session.run(feeds, fetches) : session.run(feeds));
    } catch (error) {
      throw new ProviderCallError({ port: 'policy', provider: 'tfjs', message: `ONNX Runtime training ${what} failed: ${error instanceof Error ? error.message : String(error)}`, isRetryable: false, cause: error });
    }
  };

  return {
    async forward(rows, positions, temperature) {
      // As training.ts's denseBatch: right-padded ids, places = row * length + position - 1.
      const length = Math.max(...rows.map((r) => r.length));
      const ids = new BigInt64Array(rows.length * length);
      rows.forEach((r, i) => r.forEach((id, t) => (ids[i * length + t] = BigInt(id))));
      const count = positions.reduce((n, row) => n + row.length, 0);
      const places = new BigInt64Array(count);
      const targets = new BigInt64Array(count);
      let k = 0;
      positions.forEach((row, i) =>
        row.forEach((p) => {
          places[k] = BigInt(i * length + p - 1);
          targets[k++] = BigInt(rows[i]![p]!);
        }),
      );
      const inputs: Record<string, Ort.Tensor> = {
        ...currentWeights(),
        [TRAINING_NAMES.ids]: new ort.Tensor('int64', ids, [rows.length, length]),
        [TRAINING_NAMES.mask]: maskOf(length),
        [TRAINING_NAMES.places]: new ort.Tensor('int64', places, [count]),
        [TRAINING_NAMES.targets]: new ort.Tensor('int64', targets, [count]),
        [TRAINING_NAMES.temperature]: new ort.Tensor('float32', Float32Array.of(temperature), []),
      };
      const results = await run(forwardSession, only(forwardInputs, inputs), 'forward');
      const feeds = only(trainingInputs, inputs);
      return {
        tokenLogProbs: results[TRAINING_NAMES.tokenLogProbs]!.data as Float32Array,
        entropySum: (results[TRAINING_NAMES.entropySum]!.data as Float32Array)[0]!,
        feeds,
      };
    },
    async gradients(forward, upstream, entropyWeight) {
      const results = await run(
        trainingSession,
        {
          ...forward.feeds,
          [TRAINING_NAMES.upstream]: new ort.Tensor('float32', upstream, [upstream.length]),
          [TRAINING_NAMES.entropyWeight]: new ort.Tensor('float32', Float32Array.of(entropyWeight), []),
        },
        'forward and backward',
        gradientNames,
      );
      return gradientNames.map((name) => results[name]!.data as Float32Array);
    },
    async dispose() {
      await forwardSession.release();
      await trainingSession.release();
    },
  };
}
