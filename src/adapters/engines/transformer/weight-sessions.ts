import type * as Ort from 'onnxruntime-node';
import {
  buildTransformerGraph,
  createOnnxSession,
  encodeOnnxModel,
  ONNX_OPSET,
  type OnnxGraph,
  type OnnxRuntime,
  type OnnxSessionOptions,
  withConstantInputs,
} from '../onnx-graph/index';
import { graphConfigOf, liveWeightFeeds } from './onnx-weights';
import type { Transformer } from './transformer';

// The ONNX rollout engine's sessions for the tfjs Transformer's live weights, in one of two modes
// chosen by the weights' size: up to CONSTANT_WEIGHT_BYTES the weights are constants of sessions made
// again whenever an update or a load has replaced them (ONNX Runtime packs each matrix once per
// session: 0.73-0.75 ms a 16-row decode step against 0.99-1.14 ms fed as inputs, 4 layers of width
// 128; the two sessions cost about 35 ms to make, once per update); past it the weights are inputs
// of sessions made once, so that no update waits for a model's worth of protobuf (nor meets
// protobuf's 2 GB limit).

/** Up to this many bytes of weights, they are constants of sessions made per version of the weights. */
export const CONSTANT_WEIGHT_BYTES = 256 * 2 ** 20;

/** No weight feeds: the sessions hold the weights as constants. */
export const NO_FEEDS: Record<string, Ort.Tensor> = Object.freeze({});

/**
 * The sessions a forward runs on: the chunk forward (prompts, and rows with several new tokens) and
 * the one-token forward (decode steps), with the weight feeds they take (NO_FEEDS when the weights
 * are their constants).
 */
export interface WeightSession {
  chunk: Ort.InferenceSession;
  token: Ort.InferenceSession;
  weightFeeds: Record<string, Ort.Tensor>;
}

/** The sessions for the model's current weights, counted as running from `acquire` to `done`. */
export interface WeightSessions {
  acquire(): Promise<WeightSession>;
  done(entry: WeightSession): void;
  dispose(): Promise<void>;
}

interface Graphs {
  chunk: OnnxGraph;
  token: OnnxGraph;
}

/** Both sessions of `graphs` with `weights` as constants (none: the weights stay inputs). */
async function makeSessions(
  ort: OnnxRuntime,
  graphs: Graphs,
  weights: Record<string, Float32Array>,
  options: OnnxSessionOptions,
): Promise<{ chunk: Ort.InferenceSession; token: Ort.InferenceSession }> {
  const chunkBytes = encodeOnnxModel(withConstantInputs(graphs.chunk, weights), ONNX_OPSET);
  const tokenBytes = encodeOnnxModel(withConstantInputs(graphs.token, weights), ONNX_OPSET);
  const chunk = await createOnnxSession(ort, chunkBytes, options);
  try {
    return { chunk, token: await createOnnxSession(ort, tokenBytes, options) };
  } catch (error) {
    await chunk.release();
    throw error;
  }
}

/** One version's sessions while they run or stay current. */
interface VersionSessions extends WeightSession {
  /** The tfjs variables' data ids they were made from (an update or a load gives a variable a new one). */
  ids: readonly unknown[];
  running: number;
  replaced: boolean;
}

/**
 * Constants mode: the last sessions while no variable has changed since they were made, else new
 * ones with the weights copied in as constants (the ones before are released when their last
 * forward ends).
 */
function constantWeightSessions(
  ort: OnnxRuntime,
  model: Transformer,
  graphs: Graphs,
  options: OnnxSessionOptions,
): WeightSessions {
  let current: VersionSessions | null = null;
  let disposed = false;
  let making: { ids: readonly unknown[]; made: Promise<VersionSessions> } | null = null;
  const same = (a: readonly unknown[], b: readonly unknown[]) =>
    a.length === b.length && a.every((id, i) => id === b[i]);
  const release = (entry: VersionSessions) => {
    if (entry.replaced && entry.running === 0) {
      void entry.chunk.release().catch(() => undefined);
      void entry.token.release().catch(() => undefined);
    }
  };
  const make = async (ids: readonly unknown[]): Promise<VersionSessions> => {
    // Encoded at once from the variables' data (copied into the models' bytes), before anything can replace them.
    const weights = Object.fromEntries(
      model.parameters.map((p) => [p.name, p.variable.dataSync() as Float32Array]),
    );
    const sessions = await makeSessions(ort, graphs, weights, options);
    return { ids, ...sessions, weightFeeds: NO_FEEDS, running: 0, replaced: false };
  };
  return {
    async acquire() {
      const ids = model.parameters.map((p) => p.variable.dataId);
      while (!current || !same(current.ids, ids)) {
        if (!making || !same(making.ids, ids)) {
          const pending = { ids, made: make(ids) };
          making = pending;
          pending.made.then(
            (made) => {
              if (making === pending) making = null;
              // Made after the engine was disposed (a make a later weight change overtook): freed at once.
              if (disposed) {
                made.replaced = true;
                release(made);
                return;
              }
              if (current) {
                current.replaced = true;
                release(current);
              }
              current = made;
            },
            () => {
              if (making === pending) making = null;
            },
          );
        }
        await making.made;
      }
      current.running++;
      return current;
    },
    done(entry) {
      const version = entry as VersionSessions;
      version.running--;
      release(version);
    },
    async dispose() {
      disposed = true;
      await making?.made.catch(() => undefined);
      if (current) {
        current.replaced = true;
        release(current);
      }
    },
  };
}

/**
 * Inputs mode: one pair of sessions made at the first forward and kept for the engine's life, fed
 * the current weights (copied from the variables once per version of them: liveWeightFeeds).
 */
function inputWeightSessions(
  ort: OnnxRuntime,
  model: Transformer,
  graphs: Graphs,
  options: OnnxSessionOptions,
): WeightSessions {
  const liveWeights = liveWeightFeeds(ort, model);
  let made: Promise<{ chunk: Ort.InferenceSession; token: Ort.InferenceSession }> | null = null;
  let running = 0;
  let disposed = false;
  /** Once disposed, released when the last forward on them ends. */
  const release = async () => {
    if (!disposed || running > 0) return;
    const sessions = await made?.catch(() => null);
    made = null;
    void sessions?.chunk.release().catch(() => undefined);
    void sessions?.token.release().catch(() => undefined);
  };
  return {
    async acquire() {
      made ??= makeSessions(ort, graphs, {}, options);
      const pending = made;
      // A failed make is tried again at the next forward.
      const sessions = await pending.catch((error: unknown) => {
        if (made === pending) made = null;
        throw error;
      });
      running++;
      return { ...sessions, weightFeeds: liveWeights() };
    },
    done() {
      running--;
      void release();
    },
    async dispose() {
      disposed = true;
      await release();
    },
  };
}

/** The rollout sessions of `model`, in constants mode up to `constantWeightBytes` of weights, else in inputs mode. */
export function weightSessions(
  ort: OnnxRuntime,
  model: Transformer,
  settings: { intraOpThreads: number; constantWeightBytes?: number | undefined },
): WeightSessions {
  const config = graphConfigOf(model);
  const graphs = {
    chunk: buildTransformerGraph(config),
    token: buildTransformerGraph(config, { oneToken: true }),
  };
  const options: OnnxSessionOptions = {
    intraOpThreads: settings.intraOpThreads,
    // Threads sleep between operators (see `spinning`): 1.33x at 2 threads in paired runs at load 2-3.
    sequential: true,
    spinning: false,
  };
  const weightBytes = model.parameters.reduce((n, p) => n + 4 * p.variable.size, 0);
  return weightBytes <= (settings.constantWeightBytes ?? CONSTANT_WEIGHT_BYTES)
    ? constantWeightSessions(ort, model, graphs, options)
    : inputWeightSessions(ort, model, graphs, options);
}
