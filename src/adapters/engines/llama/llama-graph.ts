import { KV_CACHE_NAMES, type OnnxGraph } from '../onnx-graph/index';
import { DifferentiableGraph, type Value } from './autodiff';
import { type LlamaConfig, llamaWeightShapes } from './config';

// The Llama family's forward as ONNX graphs (transformers' models/llama/modeling_llama.py, op for
// op in float32): RMSNorm, rotary positions, grouped key/value heads, SwiGLU, tied or untied
// output; Qwen2's q/k/v biases and Qwen3's per-head q/k norms where the config asks. Three graphs
// from the one builder: `decode` (rollouts: new tokens after a key/value past, log-probs at chosen
// places, the new keys and values out), `score` (the log-probs of given tokens and the entropy)
// and `train` (score, then the backward of sum g * logp - w * entropy by every trainable weight,
// written by autodiff.ts). LoRA (peft's `lora_A`, `lora_B`, scaling alpha / r, dropout on the
// adapter's input) wraps the chosen projections; the base weights are then frozen.

/** The projections a LoRA adapter may target (peft's `target_modules` names). */
export const LORA_TARGET_MODULES = [
  'q_proj',
  'k_proj',
  'v_proj',
  'o_proj',
  'gate_proj',
  'up_proj',
  'down_proj',
] as const;
/** One of LORA_TARGET_MODULES. */
export type LoraTargetModule = (typeof LORA_TARGET_MODULES)[number];

export interface LoraShape {
  rank: number;
  /** alpha / rank. */
  scaling: number;
  targets: readonly LoraTargetModule[];
  /** Whether the training graphs take a dropout mask per adapted projection. */
  dropout: boolean;
}

export type LlamaGraphKind = 'decode' | 'score' | 'train';

export interface LlamaGraphOptions {
  kind: LlamaGraphKind;
  lora?: LoraShape;
  /** Full fine-tuning: gradients by the base weights (`train` only). */
  trainBase?: boolean;
  /** Whether the train graph takes the entropy bonus (`entropy_weight`); without it its gradient skips two vocabulary-wide passes. Default true. */
  entropy?: boolean;
}

/** Graph input and output names besides the weights (Hugging Face names). */
export const LLAMA_NAMES = {
  /** int64 [rows, length]: the new tokens, right-padded. */
  ids: 'ids',
  /** float [rows, length, 1, headDim]: each token's rotation (config.ts's rotaryTables). */
  cos: 'rope_cos',
  sin: 'rope_sin',
  /** float: decode [rows, 1, group x length, past + length], score/train [1, 1, group x length, length] (group = heads / kvHeads; row g * length + t is query t of each group): 0 where a query sees a key, -1e9 elsewhere. */
  mask: 'attention_mask',
  /** int64 [places]: row * length + offset of each place whose next-token distribution is wanted. */
  places: 'places',
  /** int64 [places]: the tokens scored at the places (score/train). */
  targets: 'targets',
  /** float scalar: logits are divided by it. */
  temperature: 'temperature',
  /** float [places]: g, the loss's gradient by each scored log-prob (train). */
  upstream: 'upstream',
  /** float scalar: the objective is sum g * logp - entropyWeight * (entropy sum) (train). */
  entropyWeight: 'entropy_weight',
  /**
   * The cache per layer (decode): past keys and values float [rows, kvHeads, past, headDim];
   * present ones [rows, kvHeads, length, headDim], the new tokens' keys and values.
   */
  ...KV_CACHE_NAMES,
  /** float [places, vocabulary]: log-softmax(logits / temperature) (decode). */
  logProbs: 'log_probs',
  /** float [places] (score/train). */
  tokenLogProbs: 'token_log_probs',
  /** float scalar: the places' entropies summed (score/train). */
  entropySum: 'entropy_sum',
  gradient: (weight: string) => `grad.${weight}`,
  /** float [rows * length, hidden]: the input embedding rows' gradient, added at their ids by the caller (train, full). */
  embeddingRows: 'grad.embedding_rows',
  /** float [rows * length, in]: a LoRA projection's dropout mask, 0 or 1 / (1 - p) (score/train with dropout). */
  dropout: (module: string) => `dropout.${module}`,
} as const;

const MASKED = -1e9;
export { MASKED as LLAMA_MASKED };

/** A projection's Hugging Face name prefix, e.g. `model.layers.3.self_attn.q_proj`. */
export function projectionName(layer: number, module: LoraTargetModule): string {
  return `model.layers.${layer}.${module.endsWith('_proj') && ['gate_proj', 'up_proj', 'down_proj'].includes(module) ? 'mlp' : 'self_attn'}.${module}`;
}

/** The LoRA weights' names (peft's, without `base_model.model.`) and shapes: A [r, in], B [out, r]. */
export function loraWeightShapes(
  config: LlamaConfig,
  lora: LoraShape,
): Array<{ name: string; shape: number[] }> {
  const { hiddenSize: d, intermediateSize: m, heads, kvHeads, headDim: hd } = config;
  const dims: Record<LoraTargetModule, [number, number]> = {
    q_proj: [d, heads * hd],
    k_proj: [d, kvHeads * hd],
    v_proj: [d, kvHeads * hd],
    o_proj: [heads * hd, d],
    gate_proj: [d, m],
    up_proj: [d, m],
    down_proj: [m, d],
  };
  const out: Array<{ name: string; shape: number[] }> = [];
  for (let l = 0; l < config.layers; l++)
    for (const module of LORA_TARGET_MODULES) {
      if (!lora.targets.includes(module)) continue;
      const [inDim, outDim] = dims[module];
      const p = projectionName(l, module);
      out.push(
        { name: `${p}.lora_A.weight`, shape: [lora.rank, inDim] },
        { name: `${p}.lora_B.weight`, shape: [outDim, lora.rank] },
      );
    }
  return out;
}

/** The graph, its base weights' names and its LoRA weights' names (all graph inputs). */
export interface LlamaGraph {
  graph: OnnxGraph;
  baseWeights: string[];
  loraWeights: string[];
  dropoutInputs: string[];
  /**
   * Values a cut of the train graph should keep rather than recompute (cutGraph's `keep`): per layer
   * the residual stream after attention and after the MLP, the rotated queries and keys and the
   * values as attention reads them. Recomputing them would keep their operands instead (both sides
   * of each residual sum, a projection's base and adapter outputs): more bytes.
   */
  keep: string[];
}

export function buildLlamaGraph(config: LlamaConfig, options: LlamaGraphOptions): LlamaGraph {
  const { kind, lora } = options;
  const trainBase = kind === 'train' && options.trainBase === true;
  const trainLora = kind === 'train' && lora !== undefined;
  const N = LLAMA_NAMES;
  const { heads: H, kvHeads: Hkv, headDim: hd } = config;
  const G = H / Hkv;
  const g = new DifferentiableGraph({ transposedLinear: kind !== 'decode' });

  const weights = new Map<string, Value>();
  for (const w of llamaWeightShapes(config))
    weights.set(w.name, g.input(w.name, w.shape, { needsGradient: trainBase }));
  const loraWeights = new Map<string, Value>();
  if (lora)
    for (const w of loraWeightShapes(config, lora))
      loraWeights.set(w.name, g.input(w.name, w.shape, { needsGradient: trainLora }));
  const weight = (name: string) => weights.get(name)!;

  g.input(N.ids, ['rows', 'length'], { int64: true });
  const cos = g.input(N.cos, ['rows', 'length', 1, hd]);
  const sin = g.input(N.sin, ['rows', 'length', 1, hd]);
  const past = kind === 'decode' ? 'past' : 'length';
  const keysLength = kind === 'decode' ? 'keys' : 'length';
  // The mask is laid out as the grouped scores are, [.., group x length, keys]: a 5-D broadcast
  // add took 26 ms a layer on SmolLM2 (4 x 256 tokens), the 4-D one over leading axes is a copy.
  const mask = g.input(
    N.mask,
    kind === 'decode' ? ['rows', 1, 'groupLength', keysLength] : [1, 1, 'groupLength', 'length'],
  );
  g.input(N.places, ['places'], { int64: true });
  const temperature = g.input(N.temperature, []);
  const dropoutInputs: string[] = [];
  const dropoutMask = (module: string, inDim: number): Value | null => {
    if (!lora?.dropout || kind === 'decode') return null;
    const name = N.dropout(module);
    dropoutInputs.push(name);
    return g.input(name, ['tokens', inDim]);
  };

  const rowsLength = g.node('Shape', [N.ids]);
  const rowsOnly = g.node('Slice', [rowsLength, g.ints([0]), g.ints([1])]);
  const lengthOnly = g.node('Slice', [rowsLength, g.ints([1]), g.ints([2])]);
  const shapeOf = (...parts: Array<string | number[]>) =>
    g.node(
      'Concat',
      parts.map((p) => (typeof p === 'string' ? p : g.ints(p))),
      { axis: 0 },
    );
  const flatIds = g.node('Reshape', [N.ids, g.ints([-1])]);

  const eps = g.constant([config.rmsNormEps], []);
  const rmsNorm = (x: Value, w: Value) => g.mul(g.mul(x, g.rsqrt(g.add(g.meanLast(g.mul(x, x)), eps))), w);

  const projection = (x: Value, layer: number, module: LoraTargetModule, biasName?: string): Value => {
    const p = projectionName(layer, module);
    let y = g.linear(x, weight(`${p}.weight`));
    if (biasName && weights.has(biasName)) y = g.add(y, weight(biasName));
    if (lora?.targets.includes(module)) {
      const a = loraWeights.get(`${p}.lora_A.weight`)!;
      const b = loraWeights.get(`${p}.lora_B.weight`)!;
      const drop = dropoutMask(`${layer}.${module}`, a.shape[1] as number);
      const input = drop ? g.mul(x, drop) : x;
      y = g.add(y, g.scale(g.linear(g.linear(input, a), b), lora.scaling));
    }
    return y;
  };

  // rotate_half as a product with a signed permutation: exact (one nonzero per column).
  const rotation = new Float32Array(hd * hd);
  for (let i = 0; i < hd / 2; i++) {
    rotation[i * hd + i + hd / 2] = -1;
    rotation[(i + hd / 2) * hd + i] = 1;
  }
  const rotate = g.constant(rotation, [hd, hd]);
  const rope = (x: Value): Value => {
    const flat = g.reshape(x, g.ints([-1, hd]), ['vectors', hd]);
    const turned = g.reshape(g.linear(flat, rotate), g.node('Shape', [x.name]), x.shape);
    return g.add(g.mul(x, cos), g.mul(turned, sin));
  };

  const keep: string[] = [];
  let x = g.embedding(weight('model.embed_tokens.weight'), flatIds, 'tokens', N.embeddingRows);
  const presentOutputs: string[] = [];
  for (let l = 0; l < config.layers; l++) {
    const p = `model.layers.${l}`;
    const h = rmsNorm(x, weight(`${p}.input_layernorm.weight`));
    const q = projection(h, l, 'q_proj', `${p}.self_attn.q_proj.bias`);
    const k = projection(h, l, 'k_proj', `${p}.self_attn.k_proj.bias`);
    const v = projection(h, l, 'v_proj', `${p}.self_attn.v_proj.bias`);
    let q4 = g.reshape(q, shapeOf(rowsLength, [H, hd]), ['rows', 'length', H, hd]);
    let k4 = g.reshape(k, shapeOf(rowsLength, [Hkv, hd]), ['rows', 'length', Hkv, hd]);
    const v4 = g.reshape(v, shapeOf(rowsLength, [Hkv, hd]), ['rows', 'length', Hkv, hd]);
    if (config.qkNorm) {
      q4 = rmsNorm(q4, weight(`${p}.self_attn.q_norm.weight`));
      k4 = rmsNorm(k4, weight(`${p}.self_attn.k_norm.weight`));
    }
    // Query head h = j * G + i reads key/value head j (transformers' repeat_kv): the queries are
    // grouped by their key/value head instead of repeating the keys.
    const grouped = g.reshape(
      g.transpose(
        g.reshape(rope(q4), shapeOf(rowsLength, [Hkv, G, hd]), ['rows', 'length', Hkv, G, hd]),
        [0, 2, 3, 1, 4],
      ),
      shapeOf(rowsOnly, [Hkv, -1, hd]),
      ['rows', Hkv, 'groupLength', hd],
    );
    const keys = g.transpose(rope(k4), [0, 2, 1, 3]);
    const values = g.transpose(v4, [0, 2, 1, 3]);
    keep.push(grouped.name, keys.name, values.name);
    let attention: Value;
    if (kind === 'decode') {
      g.node('Identity', [keys.name], undefined, N.presentKeys(l));
      g.node('Identity', [values.name], undefined, N.presentValues(l));
      presentOutputs.push(N.presentKeys(l), N.presentValues(l));
      // The past's scores and the new tokens' are computed apart and only the scores are joined:
      // concatenating the cache with the new keys and values would copy the whole cache each step.
      const pastK = g.node('Transpose', [g.input(N.pastKeys(l), ['rows', Hkv, past, hd]).name], {
        perm: [0, 1, 3, 2],
      });
      const pastV = N.pastValues(l);
      g.input(pastV, ['rows', Hkv, past, hd]);
      const scale = g.scalar(1 / Math.sqrt(hd));
      const pastScores = g.node('Mul', [g.node('MatMul', [grouped.name, pastK]), scale]);
      const newScores = g.node('Mul', [
        g.node('MatMul', [grouped.name, g.node('Transpose', [keys.name], { perm: [0, 1, 3, 2] })]),
        scale,
      ]);
      const joined = g.node('Concat', [pastScores, newScores], { axis: -1 });
      const weights4 = g.node('Softmax', [g.node('Add', [joined, mask.name])], { axis: -1 });
      const pastLength = g.node('Slice', [g.node('Shape', [pastV]), g.ints([2]), g.ints([3])]);
      const [pastWeights, newWeights] = [
        g.node('Slice', [weights4, g.ints([0]), pastLength, g.ints([3])]),
        g.node('Slice', [weights4, pastLength, g.ints([Number.MAX_SAFE_INTEGER]), g.ints([3])]),
      ];
      attention = {
        name: g.node('Add', [
          g.node('MatMul', [pastWeights!, pastV]),
          g.node('MatMul', [newWeights!, values.name]),
        ]),
        shape: ['rows', Hkv, 'groupLength', hd],
        needsGradient: false,
      };
    } else {
      const scores = g.scale(g.matmul(grouped, g.transpose(keys, [0, 1, 3, 2])), 1 / Math.sqrt(hd));
      const weights = g.softmaxLast(g.add(scores, mask));
      attention = g.matmul(weights, values);
    }
    const merged = g.reshape(
      g.transpose(
        g.reshape(attention, shapeOf(rowsOnly, [Hkv, G], lengthOnly, [hd]), ['rows', Hkv, G, 'length', hd]),
        [0, 3, 1, 2, 4],
      ),
      g.ints([-1, H * hd]),
      ['tokens', H * hd],
    );
    x = g.add(x, projection(merged, l, 'o_proj', `${p}.self_attn.o_proj.bias`));
    keep.push(x.name);
    const h2 = rmsNorm(x, weight(`${p}.post_attention_layernorm.weight`));
    const gate = projection(h2, l, 'gate_proj');
    const up = projection(h2, l, 'up_proj');
    x = g.add(x, projection(g.mul(g.mul(gate, g.sigmoid(gate)), up), l, 'down_proj'));
    keep.push(x.name);
  }
  const final = rmsNorm(x, weight('model.norm.weight'));
  const atPlaces = g.gatherRows(final, N.places, 'places');
  const head = config.tieEmbeddings ? weight('model.embed_tokens.weight') : weight('lm_head.weight');
  const inverseTemperature: Value = {
    name: g.node('Reciprocal', [temperature.name]),
    shape: [],
    needsGradient: false,
  };
  // logits / T as (h / T) W^T: the scaling and its gradient on [places, hidden], not on the
  // vocabulary-wide logits (two passes over [places, 49152] floats on SmolLM2).
  const z = g.linear(g.mul(atPlaces, inverseTemperature), head);
  const logSoftmax = g.node('LogSoftmax', [z.name], { axis: -1 });

  const outputs: Array<{ name: string }> = [];
  const gradientOutputs: string[] = [];
  if (kind === 'decode') {
    g.node('Identity', [logSoftmax], undefined, N.logProbs);
    outputs.push({ name: N.logProbs }, ...presentOutputs.map((name) => ({ name })));
  } else {
    g.input(N.targets, ['places'], { int64: true });
    const column = g.node('Unsqueeze', [N.targets, g.ints([-1])]);
    g.node(
      'Squeeze',
      [g.node('GatherElements', [logSoftmax, column], { axis: 1 }), g.ints([-1])],
      undefined,
      N.tokenLogProbs,
    );
    const probabilities = g.node('Exp', [logSoftmax]);
    const entropies = g.node('Neg', [
      g.node('ReduceSum', [g.node('Mul', [probabilities, logSoftmax]), g.ints([-1])], { keepdims: 1 }),
    ]);
    g.node('ReduceSum', [entropies], { keepdims: 0 }, N.entropySum);
    outputs.push({ name: N.tokenLogProbs }, { name: N.entropySum });
    if (kind === 'train') {
      g.input(N.upstream, ['places']);
      // d/dz of sum g * logp[target] - w * entropy = g * onehot - p * c, with c = g (no entropy
      // bonus) or g - w * (logp + entropy); the onehot part is added at the targets alone.
      const upstream = g.node('Unsqueeze', [N.upstream, g.ints([-1])]);
      let c = upstream;
      if (options.entropy !== false) {
        g.input(N.entropyWeight, []);
        c = g.node('Sub', [
          upstream,
          g.node('Mul', [N.entropyWeight, g.node('Add', [logSoftmax, entropies])]),
        ]);
      }
      const spread = g.node('Mul', [probabilities, g.node('Neg', [c])]);
      const atTargets = g.node('Add', [g.node('GatherElements', [spread, column], { axis: 1 }), upstream]);
      g.seed(z, g.node('ScatterElements', [spread, column, atTargets], { axis: 1 }));
      const trainable = [...(trainBase ? weights.values() : []), ...(trainLora ? loraWeights.values() : [])];
      g.gradients(trainable, (v) => N.gradient(v.name));
      gradientOutputs.push(...trainable.map((v) => N.gradient(v.name)));
      if (trainBase) gradientOutputs.push(N.embeddingRows);
    }
  }
  const graph = g.toGraph(
    `llama-${kind}`,
    [...outputs, ...gradientOutputs.map((name) => ({ name }))].map(({ name }) => ({
      name,
      type: 1,
      dims: null,
    })),
  );
  return {
    graph,
    baseWeights: [...weights.keys()],
    loraWeights: [...loraWeights.keys()],
    dropoutInputs,
    keep,
  };
}
