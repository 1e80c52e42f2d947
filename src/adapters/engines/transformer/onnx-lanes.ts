import type * as Ort from 'onnxruntime-node';
import { ProviderCallError } from '../../../core/errors';
import {
  createWorkerLane,
  type LaneRun,
  type OnnxRuntime,
  type OnnxSessionOptions,
  onnxSessionOptions,
  TRAINING_NAMES,
} from '../onnx-graph/index';
import type { TwoPassForward } from '../two-pass';

// What the lanes of the ONNX Runtime training engine (onnx-training.ts) share: a chunk's forward,
// the trainer interface every lane implements, the graphs and feeds of one engine, and the lane
// on a worker thread (the calling thread's lane is in onnx-training.ts).

/** One row chunk's forward: its scored log-probs and entropy sum, and the feeds its gradients need. */
export interface OnnxTrainingForward extends TwoPassForward {
  /** In the order of the chunk's positions, row by row. */
  tokenLogProbs: Float32Array;
  entropySum: number;
  /** The forward's inputs. */
  readonly feeds: Record<string, Ort.Tensor>;
  /**
   * The activations the backward reads (a worker lane's: a marker, they stay in the worker); null
   * once dropped (the backward runs the forward again).
   */
  kept: Record<string, Ort.Tensor> | null;
  /** A worker lane's key for what it kept, to drop there when `kept` was dropped here. */
  laneKey?: string;
  keptBytes: number;
}

/** One chunk's forward and backward in one run (`OnnxTrainer.step`). */
export interface OnnxTrainingStep {
  tokenLogProbs: Float32Array;
  entropySum: number;
  /** By weight, in `model.parameters` order. */
  gradients: Float32Array[];
}

export interface OnnxTrainer {
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
  /**
   * The forward and the backward in one run of the uncut training graph, fed `upstream` before the
   * forward (a loss with a constant gradient): the log-probs, the entropy sum and the gradients.
   */
  step(
    rows: number[][],
    positions: number[][],
    temperature: number,
    upstream: Float32Array,
    entropyWeight: number,
  ): Promise<OnnxTrainingStep>;
  /** Frees what `forward` kept (it will not be used: its backward runs the forward again). */
  release(forward: OnnxTrainingForward): void;
  /** Frees everything forwards kept: after an update that failed between its forwards and backwards. */
  reset(): void;
  dispose(): Promise<void>;
}

/** What every lane of one engine shares: the cut graphs, their names, the live weights. */
export interface TrainerGraphs {
  forwardModel: Uint8Array;
  backwardModel: Uint8Array;
  /** The training graph uncut: forward and backward in one run (`OnnxTrainer.step`). */
  trainModel: Uint8Array;
  options: OnnxSessionOptions;
  /** Forward outputs: the log-probs, the entropy sum, then every activation the backward may read. */
  forwardOutputs: string[];
  /** Of those activations, the ones the backward graph reads. */
  backwardReads: string[];
  backwardOutputs: string[];
  gradientNames: string[];
  tokenEmbedding: number;
  width: number;
  currentWeights: () => Record<string, Ort.Tensor>;
  /** Right-padded ids, the scored places and the rest of a forward's non-weight inputs. */
  batchFeeds(rows: number[][], positions: number[][], temperature: number): Record<string, Ort.Tensor>;
}

export const laneError = (what: string, error: unknown) =>
  new ProviderCallError({
    port: 'policy',
    provider: 'tfjs',
    message: `ONNX Runtime training ${what} failed: ${error instanceof Error ? error.message : String(error)}`,
    isRetryable: false,
    cause: error,
  });

/** The loss's feeds of a backward: d loss / d logp and the entropy bonus's weight. */
export const lossFeeds = (
  ort: OnnxRuntime,
  upstream: Float32Array,
  entropyWeight: number,
): Record<string, Ort.Tensor> => ({
  [TRAINING_NAMES.upstream]: new ort.Tensor('float32', upstream, [upstream.length]),
  [TRAINING_NAMES.entropyWeight]: new ort.Tensor('float32', Float32Array.of(entropyWeight), []),
});

/** A backward's (or a step's) outputs as the gradients by weight, the token embedding's rows added. */
export function gradientsOf(
  shared: TrainerGraphs,
  outputs: Record<string, { data: unknown }>,
  feeds: Record<string, Ort.Tensor>,
): Float32Array[] {
  const gradients = shared.gradientNames.map((name) => outputs[name]!.data as Float32Array);
  addTokenRows(
    shared,
    gradients,
    outputs[TRAINING_NAMES.tokenRowsGradient]!.data as Float32Array,
    feeds[TRAINING_NAMES.ids]!.data as BigInt64Array,
  );
  return gradients;
}

/** A step's outputs: its log-probs, entropy sum and gradients. */
export function stepOf(
  shared: TrainerGraphs,
  outputs: Record<string, { data: unknown }>,
  feeds: Record<string, Ort.Tensor>,
): OnnxTrainingStep {
  return {
    tokenLogProbs: outputs[TRAINING_NAMES.tokenLogProbs]!.data as Float32Array,
    entropySum: (outputs[TRAINING_NAMES.entropySum]!.data as Float32Array)[0]!,
    gradients: gradientsOf(shared, outputs, feeds),
  };
}

/** The gradients' token-embedding part from the input gather: each token's row added at its id. */
function addTokenRows(
  shared: TrainerGraphs,
  gradients: Float32Array[],
  rows: Float32Array,
  ids: BigInt64Array,
) {
  // The graph leaves it out: see TRAINING_NAMES.tokenRowsGradient.
  const embedding = gradients[shared.tokenEmbedding]!;
  const width = shared.width;
  for (let t = 0; t < ids.length; t++) {
    const at = Number(ids[t]) * width;
    const from = t * width;
    for (let j = 0; j < width; j++) embedding[at + j]! += rows[from + j]!;
  }
}

/**
 * A lane on a worker thread (worker-lane.ts): the same two sessions there, the weights sent when
 * they change, a forward's kept activations held in the worker under a key until its backward.
 */
export async function createWorkerTrainer(ort: OnnxRuntime, shared: TrainerGraphs): Promise<OnnxTrainer> {
  const lane = await createWorkerLane(
    { forward: shared.forwardModel, backward: shared.backwardModel, train: shared.trainModel },
    onnxSessionOptions(shared.options),
  );
  const { forwardOutputs, backwardOutputs, backwardReads } = shared;
  let sentWeights: Record<string, Ort.Tensor> | null = null;
  let nextKey = 0;
  const run = async (request: LaneRun, what: string) => {
    try {
      return await lane.run(request);
    } catch (error) {
      throw laneError(what, error);
    }
  };
  const sendWeights = () => {
    const weights = shared.currentWeights();
    if (weights !== sentWeights) {
      lane.setStatic(weights);
      sentWeights = weights;
    }
  };
  const forwardRun = (feeds: Record<string, Ort.Tensor>, key: string | null) => {
    sendWeights();
    return run(
      {
        session: 'forward',
        feeds,
        fetches:
          key === null ? forwardOutputs.slice(0, 2) : [...forwardOutputs.slice(0, 2), ...backwardReads],
        ...(key !== null && { keep: { key, names: backwardReads } }),
      },
      'forward',
    );
  };
  return {
    async forward(rows, positions, temperature, keep) {
      const feeds = shared.batchFeeds(rows, positions, temperature);
      const key = keep ? `k${nextKey++}` : null;
      const result = await forwardRun(feeds, key);
      return {
        tokenLogProbs: result.outputs[TRAINING_NAMES.tokenLogProbs]!.data as Float32Array,
        entropySum: (result.outputs[TRAINING_NAMES.entropySum]!.data as Float32Array)[0]!,
        feeds,
        kept: key === null ? null : {},
        keptBytes: result.keptBytes,
        ...(key !== null && { laneKey: key }),
      };
    },
    async gradients(forward, upstream, entropyWeight) {
      let key = forward.laneKey;
      // Not kept (or refused by the budget, and then released): the worker runs the forward again,
      // keeping this time.
      if (forward.kept === null || key === undefined) {
        key = `k${nextKey++}`;
        await forwardRun(forward.feeds, key);
      }
      const result = await run(
        {
          session: 'backward',
          feeds: { ...forward.feeds, ...lossFeeds(ort, upstream, entropyWeight) },
          fetches: backwardOutputs,
          useKept: key,
        },
        'backward',
      );
      return gradientsOf(shared, result.outputs, forward.feeds);
    },
    async step(rows, positions, temperature, upstream, entropyWeight) {
      const feeds = shared.batchFeeds(rows, positions, temperature);
      sendWeights();
      const result = await run(
        {
          session: 'train',
          feeds: { ...feeds, ...lossFeeds(ort, upstream, entropyWeight) },
          fetches: [TRAINING_NAMES.tokenLogProbs, TRAINING_NAMES.entropySum, ...backwardOutputs],
        },
        'forward and backward',
      );
      return stepOf(shared, result.outputs, feeds);
    },
    release(forward) {
      if (forward.laneKey !== undefined) lane.drop(forward.laneKey);
    },
    reset: () => lane.clear(),
    dispose: () => lane.dispose(),
  };
}
