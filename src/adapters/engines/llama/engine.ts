import type * as Ort from 'onnxruntime-node';
import { AbortedError } from '../../../core/errors';
import { emptyKvCache, scatterKvCache, type KvCacheShape } from '../../../rollout-engine/kv-cache';
import { createOnnxSession, type OnnxRuntime } from '../onnx-graph/index';
import { type CutGraphs, cutGraph, encodeOnnxModel, withConstantInputs } from '../onnx-graph/index';
import { createFeedBuilders, int64 } from './engine-feeds';

export type { DropoutMasks } from './engine-feeds';
export type {
  LlamaEngine,
  LlamaEngineOptions,
  LlamaRow,
  ScoredChunk,
  TrainingForward,
  TrainingMemoryArena,
  WeightMap,
} from './engine-types';
import type {
  LlamaEngine,
  LlamaEngineOptions,
  LlamaRow,
  TrainingMemoryArena,
  WeightMap,
} from './engine-types';
import { createKvSlabs } from './kv-slab';
import { buildLlamaGraph, LLAMA_MASKED, LLAMA_NAMES, type LlamaGraphKind } from './llama-graph';

// The Llama engine's sessions on ONNX Runtime: decode (rollouts), score and train graphs built by
// llama-graph.ts. Frozen weights are constants of the sessions (ONNX Runtime packs each matrix
// once per session), so LoRA and inference pay nothing per run for the base model; weights that
// train (full fine-tuning) are inputs fed at each run from the live arrays.

/**
 * What the backward computes again from kept activations instead of fetching them out of the
 * forward: elementwise and shape ops, whose recomputation costs about what a copy out of ONNX
 * Runtime and back does. Matrix products, softmaxes and reductions are kept.
 */
const RECOMPUTED_OPS = new Set([
  'Add',
  'Sub',
  'Mul',
  'Neg',
  'Sigmoid',
  'Sqrt',
  'Reciprocal',
  'Exp',
  'Reshape',
  'Transpose',
  'Unsqueeze',
  'Squeeze',
  'Slice',
  'Concat',
  'Identity',
  'Expand',
  'Gather',
  'ConstantOfShape',
]);

export async function createLlamaEngine(ort: OnnxRuntime, options: LlamaEngineOptions): Promise<LlamaEngine> {
  const { config, base, lora, trainBase } = options;
  const kvShape: KvCacheShape = {
    contextLength: config.maxPositions,
    layers: config.layers,
    heads: config.kvHeads,
    headWidth: config.headDim,
  };
  const sessions = new Map<string, Promise<{ session: Ort.InferenceSession; inputs: Set<string> }>>();
  const cuts = new Map<boolean, CutGraphs>();
  /** The training graph cut into its forward and its backward (with or without the entropy bonus). */
  const cutOf = (entropy: boolean) => {
    let cut = cuts.get(entropy);
    if (!cut) {
      const built = buildLlamaGraph(config, {
        kind: 'train',
        ...(lora && { lora: lora.shape }),
        trainBase,
        entropy,
      });
      cut = cutGraph(built.graph, {
        forwardOutputs: [LLAMA_NAMES.tokenLogProbs, LLAMA_NAMES.entropySum],
        recomputable: RECOMPUTED_OPS,
        staticInputs: new Set([...built.baseWeights, ...built.loraWeights]),
        keep: new Set(built.keep),
      });
      cuts.set(entropy, cut);
    }
    return cut;
  };
  const sessionOf = (kind: LlamaGraphKind | 'train-forward' | 'train-backward', entropy = true) => {
    const key = `${kind}:${entropy}`;
    let made = sessions.get(key);
    if (!made) {
      made = (async () => {
        const built =
          kind === 'train-forward' || kind === 'train-backward'
            ? {
                graph: kind === 'train-forward' ? cutOf(entropy).forward : cutOf(entropy).backward,
                baseWeights: [] as string[],
              }
            : buildLlamaGraph(config, {
                kind,
                ...(lora && { lora: lora.shape }),
                trainBase,
                entropy,
              });
        // Frozen weights are constants of the decode session only: a decode step's products have a
        // few rows, so packing each matrix once per session (not once per run) is most of their
        // cost; a score or train run's products have thousands of rows, where packing per run is
        // cheap, and constants there would cost another copy of the model (and its packed form) per
        // session and a graph optimisation over it (measured on SmolLM2: 17 GB peak, 65 s to build).
        const graph =
          trainBase || kind !== 'decode'
            ? built.graph
            : withConstantInputs(
                built.graph,
                Object.fromEntries(built.baseWeights.map((name) => [name, base.get(name)!])),
              );
        // One operator after another: the graphs are chains, where a parallel executor only adds hand-offs (decode 72 -> 66 ms a step on SmolLM2, 16 rows).
        const session = await createOnnxSession(ort, encodeOnnxModel(graph, 17), {
          sequential: true,
          // A training session's arena holds its largest run (a whole chunk's activations) for
          // the policy's life, and the one-run and two-run sessions' arenas add up; by default only
          // the one-run session keeps one (SFT's path and an RL step's on-policy update: without it
          // every run maps and faults its activations afresh, about 15% of a LoRA step on SmolLM2).
          ...(kind.startsWith('train') && { memoryArena: trainingArena(options.trainingMemoryArena, kind) }),
          ...options.session,
        });
        return { session, inputs: new Set(session.inputNames) };
      })();
      sessions.set(key, made);
      made.catch(() => sessions.delete(key));
    }
    return made;
  };
  const weightFeeds = (inputs: Set<string>) => {
    const feeds: Record<string, Ort.Tensor> = {};
    const add = (map: WeightMap, shapes: Map<string, number[]>) => {
      for (const [name, values] of map)
        if (inputs.has(name)) feeds[name] = new ort.Tensor('float32', values, shapes.get(name)!);
    };
    add(base, baseShapes);
    if (lora) add(lora.weights, loraShapes);
    return feeds;
  };
  const built = buildLlamaGraph(config, { kind: 'train', ...(lora && { lora: lora.shape }), trainBase });
  const shapeOfInput = new Map(built.graph.inputs.map((i) => [i.name, (i.dims ?? []) as number[]]));
  const baseShapes = new Map(built.baseWeights.map((n) => [n, shapeOfInput.get(n)!]));
  const loraShapes = new Map(built.loraWeights.map((n) => [n, shapeOfInput.get(n)!]));
  const trainableNames = [...(trainBase ? built.baseWeights : []), ...(lora ? built.loraWeights : [])];
  const { headDim: hd } = config;

  const { rope, sequenceFeeds, dropoutFeeds } = createFeedBuilders(ort, config);

  const slabs = createKvSlabs(kvShape, config.maxPositions);

  async function decodeBatch(rows: LlamaRow[], temperature: number): Promise<Float32Array[]> {
    const { session, inputs } = await sessionOf('decode');
    const pending = rows.map((r) => r.sequence.length - r.cached);
    const length = Math.max(...pending);
    const past = slabs.slabFor(rows, Math.max(...rows.map((r, i) => r.cached + pending[i]!)));
    const pastLength = past.capacity;
    const total = pastLength + length;
    const ids = new Array<number>(rows.length * length);
    const positions = new Array<number>(rows.length * length);
    const G = config.heads / config.kvHeads;
    const mask = new Float32Array(rows.length * G * length * total).fill(LLAMA_MASKED);
    const places: number[] = [];
    rows.forEach((r, i) => {
      for (let t = 0; t < length; t++) {
        const position = Math.min(r.cached + t, r.sequence.length - 1);
        ids[i * length + t] = r.sequence[position]!;
        positions[i * length + t] = position;
        // A padding query sees what the row's last real token sees (its output is dropped).
        const visible = Math.min(t, pending[i]! - 1);
        for (let group = 0; group < G; group++) {
          const at = ((i * G + group) * length + t) * total;
          mask.fill(0, at, at + r.cached);
          mask.fill(0, at + pastLength, at + pastLength + visible + 1);
        }
      }
      places.push(i * length + pending[i]! - 1);
    });
    const feeds: Record<string, Ort.Tensor> = {
      ...weightFeeds(inputs),
      [LLAMA_NAMES.ids]: int64(ort, ids, [rows.length, length]),
      ...rope(positions, rows.length, length),
      [LLAMA_NAMES.mask]: new ort.Tensor('float32', mask, [rows.length, 1, G * length, total]),
      [LLAMA_NAMES.places]: int64(ort, places, [places.length]),
      [LLAMA_NAMES.temperature]: new ort.Tensor(
        'float32',
        new Float32Array([temperature > 0 ? temperature : 1]),
        [],
      ),
    };
    const dims = [rows.length, config.kvHeads, pastLength, hd];
    for (let l = 0; l < config.layers; l++) {
      feeds[LLAMA_NAMES.pastKeys(l)] = new ort.Tensor('float32', past.keys[l]!, dims);
      feeds[LLAMA_NAMES.pastValues(l)] = new ort.Tensor('float32', past.values[l]!, dims);
    }
    const out = await session.run(feeds);
    const targets = rows.map((r) => (r.released ? { ...r, cached: 0, ...emptyKvCache(kvShape) } : r));
    for (let l = 0; l < config.layers; l++) {
      for (const [kind, name] of [
        ['keys', LLAMA_NAMES.presentKeys(l)],
        ['values', LLAMA_NAMES.presentValues(l)],
      ] as const) {
        const data = out[name]!.data as Float32Array;
        scatterKvCache(targets, l, kind, data, { length, offset: 0 }, pending, kvShape);
        past.write(kind, l, rows, data, length, pending);
      }
    }
    rows.forEach((r, i) => {
      r.cached += pending[i]!;
      past.lengths[i] = r.cached;
    });
    if (rows.some((r) => r.released)) slabs.drop();
    const logProbs = out[LLAMA_NAMES.logProbs]!.data as Float32Array;
    const V = config.vocabSize;
    const result = rows.map((_, i) => logProbs.slice(i * V, (i + 1) * V));
    for (const tensor of Object.values(out)) tensor.dispose?.();
    return result;
  }

  let zeroAdapter: Record<string, Ort.Tensor> | null = null;
  const zeroAdapterFeeds = () => {
    zeroAdapter ??= Object.fromEntries(
      [...loraShapes]
        .filter(([name]) => name.endsWith('lora_B.weight'))
        .map(([name, dims]) => [
          name,
          new ort.Tensor('float32', new Float32Array(dims[0]! * dims[1]!), dims),
        ]),
    );
    return zeroAdapter;
  };

  /** A backward's gradients added into `into` (the embedding's rows scattered by the chunk's token ids). */
  const addGradients = (out: Ort.InferenceSession.ReturnType, ids: readonly number[], into: WeightMap) => {
    for (const name of trainableNames) {
      const g = out[LLAMA_NAMES.gradient(name)]!.data as Float32Array;
      const target = into.get(name);
      // The first chunk's gradient is taken as it came (a fresh array of this run's output).
      if (!target) into.set(name, g);
      else for (let i = 0; i < g.length; i++) target[i]! += g[i]!;
    }
    if (trainBase) {
      const rows = out[LLAMA_NAMES.embeddingRows]!.data as Float32Array;
      const d = config.hiddenSize;
      const target = into.get('model.embed_tokens.weight')!;
      ids.forEach((id, t) => {
        const from = t * d;
        const to = id * d;
        for (let j = 0; j < d; j++) target[to + j]! += rows[from + j]!;
      });
    }
  };
  const only = (names: Set<string>, feeds: Record<string, Ort.Tensor>) =>
    Object.fromEntries(Object.entries(feeds).filter(([name]) => names.has(name)));
  return {
    kvShape,
    trainableNames,
    async decode(rows, temperature) {
      const out = new Array<Float32Array>(rows.length);
      for (let start = 0; start < rows.length; start += options.maxBatchRows) {
        const batch = rows.slice(start, start + options.maxBatchRows);
        const result = await decodeBatch(batch, temperature);
        result.forEach((r, k) => {
          out[start + k] = r;
        });
      }
      return out;
    },
    chunks(lengths) {
      const order = lengths.map((_, i) => i);
      const out: number[][] = [];
      let current: number[] = [];
      let longest = 0;
      for (const i of order) {
        const next = Math.max(longest, lengths[i]!);
        if (current.length > 0 && next * (current.length + 1) > options.maxChunkTokens) {
          out.push(current);
          current = [];
          longest = 0;
        }
        current.push(i);
        longest = Math.max(longest, lengths[i]!);
      }
      if (current.length > 0) out.push(current);
      return out;
    },
    async score(sequences, positions, temperature, dropout, withoutAdapter) {
      const { session, inputs } = await sessionOf('score');
      const { feeds, tokens } = sequenceFeeds(sequences, positions, temperature);
      const out = await session.run({
        ...weightFeeds(inputs),
        ...(withoutAdapter && lora && zeroAdapterFeeds()),
        ...feeds,
        ...dropoutFeeds(inputs, dropout, tokens),
      });
      const tokenLogProbs = out[LLAMA_NAMES.tokenLogProbs]!.data as Float32Array;
      const entropySum = (out[LLAMA_NAMES.entropySum]!.data as Float32Array)[0]!;
      return { tokenLogProbs, entropySum };
    },
    async trainingForward(sequences, positions, temperature, { entropy, dropout, keep }) {
      const cut = cutOf(entropy);
      const { session, inputs } = await sessionOf('train-forward', entropy);
      const { feeds, tokens, ids } = sequenceFeeds(sequences, positions, temperature);
      const all = { ...feeds, ...dropoutFeeds(inputs, dropout, tokens) };
      // Not kept: only the loss's outputs are fetched (the activations are not copied out to be dropped).
      const lossOutputs = [LLAMA_NAMES.tokenLogProbs, LLAMA_NAMES.entropySum];
      const out = await session.run(
        { ...weightFeeds(inputs), ...all },
        keep ? [...lossOutputs, ...cut.saved] : lossOutputs,
      );
      const kept = keep ? Object.fromEntries(cut.saved.map((name) => [name, out[name]!])) : null;
      return {
        tokenLogProbs: out[LLAMA_NAMES.tokenLogProbs]!.data as Float32Array,
        entropySum: (out[LLAMA_NAMES.entropySum]!.data as Float32Array)[0]!,
        entropy,
        feeds: all,
        ids,
        kept,
        keptBytes: kept
          ? Object.values(kept).reduce((n, t) => n + (t.data as ArrayBufferView).byteLength, 0)
          : 0,
      };
    },
    async gradients(forward, upstream, entropyWeight, into) {
      const cut = cutOf(forward.entropy);
      let kept = forward.kept;
      if (!kept) {
        const again = await sessionOf('train-forward', forward.entropy);
        const out = await again.session.run(
          { ...weightFeeds(again.inputs), ...only(again.inputs, forward.feeds) },
          [...cut.saved],
        );
        kept = Object.fromEntries(cut.saved.map((name) => [name, out[name]!]));
      }
      forward.kept = null;
      const { session, inputs } = await sessionOf('train-backward', forward.entropy);
      const out = await session.run({
        ...weightFeeds(inputs),
        ...only(inputs, forward.feeds),
        ...kept,
        [LLAMA_NAMES.upstream]: new ort.Tensor('float32', upstream, [upstream.length]),
        ...(inputs.has(LLAMA_NAMES.entropyWeight) && {
          [LLAMA_NAMES.entropyWeight]: new ort.Tensor('float32', new Float32Array([entropyWeight]), []),
        }),
      });
      addGradients(out, forward.ids, into);
    },
    async trainingStep(
      sequences,
      positions,
      temperature,
      { entropy, dropout },
      upstream,
      entropyWeight,
      into,
    ) {
      const { session, inputs } = await sessionOf('train', entropy);
      const { feeds, tokens, ids } = sequenceFeeds(sequences, positions, temperature);
      const out = await session.run({
        ...weightFeeds(inputs),
        ...feeds,
        ...dropoutFeeds(inputs, dropout, tokens),
        [LLAMA_NAMES.upstream]: new ort.Tensor('float32', upstream, [upstream.length]),
        ...(inputs.has(LLAMA_NAMES.entropyWeight) && {
          [LLAMA_NAMES.entropyWeight]: new ort.Tensor('float32', new Float32Array([entropyWeight]), []),
        }),
      });
      addGradients(out, ids, into);
      return {
        tokenLogProbs: out[LLAMA_NAMES.tokenLogProbs]!.data as Float32Array,
        entropySum: (out[LLAMA_NAMES.entropySum]!.data as Float32Array)[0]!,
      };
    },
    async dispose() {
      const made = [...sessions.values()];
      sessions.clear();
      for (const m of made) {
        try {
          await (await m).session.release();
        } catch {
          // A session that failed to build holds nothing.
        }
      }
    },
  };
}

/** Whether a training session of `kind` keeps its memory arena under the setting (default `'one-run'`). */
function trainingArena(setting: TrainingMemoryArena | undefined, kind: string): boolean {
  return setting === true || ((setting ?? 'one-run') === 'one-run' && kind === 'train');
}

export function throwIfSignalAborted(signal: AbortSignal | undefined, what: string): void {
  if (signal?.aborted) throw new AbortedError({ what, cause: signal.reason });
}
