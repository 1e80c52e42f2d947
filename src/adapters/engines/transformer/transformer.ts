import * as tf from '@tensorflow/tfjs';
import type { Random } from '../../../core/random';
import type { TransformerGraphShape } from '../onnx-graph/index';

/** A trained variable by name: the Transformer's parameters, and any other tfjs model's (the ICD pointer selector's). */
export interface NamedParameter {
  name: string;
  variable: tf.Variable;
  /** AdamW's decoupled weight decay applies to matrices only (not to norms, biases or embeddings). */
  decay: boolean;
}

/**
 * A GPT-style decoder: pre-norm blocks, learned positions, tied input/output embedding. Its sizes
 * are the ONNX graphs' (one type: the engines build the same model in tfjs and in ONNX).
 */
export type TransformerConfig = TransformerGraphShape;

interface Block {
  norm1Gain: tf.Variable;
  norm1Bias: tf.Variable;
  qkv: tf.Variable;
  qkvBias: tf.Variable;
  attnOut: tf.Variable;
  attnOutBias: tf.Variable;
  norm2Gain: tf.Variable;
  norm2Bias: tf.Variable;
  mlpUp: tf.Variable;
  mlpUpBias: tf.Variable;
  mlpDown: tf.Variable;
  mlpDownBias: tf.Variable;
}

/** Key/value tensors of one chunk, per layer: [rows, heads, chunk, headWidth]. */
export interface ChunkCache {
  keys: tf.Tensor4D[];
  values: tf.Tensor4D[];
}

/** Layer-norm epsilon (the ONNX graphs get it through onnx-weights.ts, graphConfigOf) and the additive mask of a hidden key (the ONNX engines use the same). */
export const LN_EPS = 1e-5;
export const MASKED = -1e9;

export class Transformer {
  readonly config: TransformerConfig;
  readonly parameters: NamedParameter[];
  private readonly tokenEmbedding: tf.Variable;
  private readonly positionEmbedding: tf.Variable;
  private readonly blocks: Block[];
  private readonly finalGain: tf.Variable;
  private readonly finalBias: tf.Variable;
  readonly headWidth: number;

  /** Weights drawn from `random` (GPT-2 initialisation), so that a seed fixes them on every backend. */
  constructor(config: TransformerConfig, random: Random) {
    this.config = config;
    this.headWidth = config.width / config.heads;
    const { vocabSize: V, contextLength: C, width: d, mlpWidth: m, layers } = config;
    this.parameters = [];
    const add = (
      name: string,
      shape: number[],
      init: 'normal' | 'zeros' | 'ones',
      std: number,
      decay: boolean,
    ): tf.Variable => {
      const size = shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(size);
      if (init === 'ones') data.fill(1);
      else if (init === 'normal') for (let i = 0; i < size; i++) data[i] = random.nextNormal() * std;
      const variable = tf.variable(tf.tensor(data, shape), true, `${name}_${uniqueSuffix()}`);
      this.parameters.push({ name, variable, decay });
      return variable;
    };
    // GPT-2: N(0, 0.02), residual projections scaled by 1/sqrt(2 * layers).
    const residualStd = 0.02 / Math.sqrt(2 * layers);
    this.tokenEmbedding = add('tokenEmbedding', [V, d], 'normal', 0.02, false);
    this.positionEmbedding = add('positionEmbedding', [C, d], 'normal', 0.01, false);
    this.blocks = Array.from({ length: layers }, (_, l) => ({
      norm1Gain: add(`blocks.${l}.norm1.gain`, [d], 'ones', 0, false),
      norm1Bias: add(`blocks.${l}.norm1.bias`, [d], 'zeros', 0, false),
      qkv: add(`blocks.${l}.attention.qkv`, [d, 3 * d], 'normal', 0.02, true),
      qkvBias: add(`blocks.${l}.attention.qkvBias`, [3 * d], 'zeros', 0, false),
      attnOut: add(`blocks.${l}.attention.out`, [d, d], 'normal', residualStd, true),
      attnOutBias: add(`blocks.${l}.attention.outBias`, [d], 'zeros', 0, false),
      norm2Gain: add(`blocks.${l}.norm2.gain`, [d], 'ones', 0, false),
      norm2Bias: add(`blocks.${l}.norm2.bias`, [d], 'zeros', 0, false),
      mlpUp: add(`blocks.${l}.mlp.up`, [d, m], 'normal', 0.02, true),
      mlpUpBias: add(`blocks.${l}.mlp.upBias`, [m], 'zeros', 0, false),
      mlpDown: add(`blocks.${l}.mlp.down`, [m, d], 'normal', residualStd, true),
      mlpDownBias: add(`blocks.${l}.mlp.downBias`, [d], 'zeros', 0, false),
    }));
    this.finalGain = add('finalNorm.gain', [d], 'ones', 0, false);
    this.finalBias = add('finalNorm.bias', [d], 'zeros', 0, false);
  }

  get parameterCount(): number {
    return this.parameters.reduce((n, p) => n + p.variable.size, 0);
  }

  dispose(): void {
    for (const p of this.parameters) p.variable.dispose();
  }

  /** Sets every parameter from `values` (by parameter name, each of the parameter's size): pretrained weights. */
  assignWeights(values: ReadonlyMap<string, Float32Array>): void {
    for (const p of this.parameters) {
      const v = values.get(p.name);
      if (!v || v.length !== p.variable.size)
        throw new Error(
          `assignWeights: parameter '${p.name}' needs ${p.variable.size} values, got ${v?.length}`,
        );
    }
    tf.tidy(() => {
      for (const p of this.parameters) p.variable.assign(tf.tensor(values.get(p.name)!, p.variable.shape));
    });
  }

  /**
   * Full causal forward over right-padded rows [B, T] (`idValues`: the same ids, row-major):
   * logits [B * T, V], or with `scoredRows` (indices into the B * T places, distinct) only those
   * places' logits [N, V]. Training scores a small share of the places (the policy's tokens, not
   * the prompt or observations), and the output layer is the widest product of the model.
   */
  forwardFull(ids: tf.Tensor2D, idValues: Int32Array, scoredRows?: Int32Array): tf.Tensor2D {
    const [B, T] = ids.shape;
    const { width: d } = this.config;
    const tokens = embeddingLookup(this.tokenEmbedding, ids, idValues);
    let x = tf.add(
      tf.reshape(tokens, [B, T, d]),
      tf.slice(this.positionEmbedding, [0, 0], [T, d]),
    ) as tf.Tensor3D;
    const mask = causalMask(T);
    for (const block of this.blocks) {
      x = this.block(block, x, (k, v) => ({ keys: k, values: v, mask }));
    }
    return this.logits(x, scoredRows);
  }

  /**
   * Forward of new tokens [S, m] (right-padded) after cached keys/values [S, H, P, dh] per layer,
   * row s having `pastLengths[s]` valid cached positions and its new tokens at positions
   * pastLengths[s], pastLengths[s] + 1, ... Returns logits [S * m, V] and the chunk's own keys
   * and values per layer (for the caller to cache).
   */
  forwardChunk(
    tokens: tf.Tensor2D,
    positions: tf.Tensor2D,
    past: { keys: tf.Tensor4D[]; values: tf.Tensor4D[] } | null,
    pastLengths: readonly number[],
  ): { logits: tf.Tensor2D; cache: ChunkCache } {
    const [S, m] = tokens.shape;
    const P = past?.keys[0]?.shape[2] ?? 0;
    const x0 = tf.add(
      tf.gather(this.tokenEmbedding, tokens),
      tf.gather(this.positionEmbedding, positions),
    ) as tf.Tensor3D;
    const mask = chunkMask(S, m, P, pastLengths);
    const cache: ChunkCache = { keys: [], values: [] };
    let x = x0;
    this.blocks.forEach((block, l) => {
      x = this.block(block, x, (k, v) => {
        cache.keys.push(k);
        cache.values.push(v);
        if (!past || P === 0) return { keys: k, values: v, mask };
        return { keys: tf.concat([past.keys[l]!, k], 2), values: tf.concat([past.values[l]!, v], 2), mask };
      });
    });
    return { logits: this.logits(x), cache };
  }

  private block(
    b: Block,
    x: tf.Tensor3D,
    attendTo: (k: tf.Tensor4D, v: tf.Tensor4D) => { keys: tf.Tensor4D; values: tf.Tensor4D; mask: tf.Tensor },
  ): tf.Tensor3D {
    const [B, T, d] = x.shape;
    const H = this.config.heads;
    const dh = this.headWidth;
    const h = layerNorm(x, b.norm1Gain, b.norm1Bias);
    const qkv = linear(tf.reshape(h, [B * T, d]), b.qkv, b.qkvBias);
    const [q, k, v] = tf
      .split(qkv, 3, 1)
      .map((t) => tf.transpose(tf.reshape(t, [B, T, H, dh]), [0, 2, 1, 3]) as tf.Tensor4D) as [
      tf.Tensor4D,
      tf.Tensor4D,
      tf.Tensor4D,
    ];
    const { keys, values, mask } = attendTo(k, v);
    const scores = tf.add(tf.mul(tf.matMul(q, keys, false, true), 1 / Math.sqrt(dh)), mask);
    const attended = tf.matMul(tf.softmax(scores), values);
    const merged = tf.reshape(tf.transpose(attended, [0, 2, 1, 3]), [B * T, d]);
    const attnOut = linear(merged, b.attnOut, b.attnOutBias);
    const x1 = tf.add(x, tf.reshape(attnOut, [B, T, d])) as tf.Tensor3D;
    const h2 = tf.reshape(layerNorm(x1, b.norm2Gain, b.norm2Bias), [B * T, d]);
    const up = gelu(linear(h2, b.mlpUp, b.mlpUpBias));
    const down = linear(up, b.mlpDown, b.mlpDownBias);
    return tf.add(x1, tf.reshape(down, [B, T, d])) as tf.Tensor3D;
  }

  private logits(x: tf.Tensor3D, rows?: Int32Array): tf.Tensor2D {
    const [B, T, d] = x.shape;
    const normed = tf.reshape(layerNorm(x, this.finalGain, this.finalBias), [B * T, d]) as tf.Tensor2D;
    return tf.matMul(rows ? gatherRows(normed, rows) : normed, this.tokenEmbedding, false, true);
  }
}

/**
 * The listed rows of x [R, d] (distinct indices), with the gradient scattered back: tfjs's own
 * gather gradient needs UnsortedSegmentSum, which the wasm backend lacks; ScatterNd it has.
 */
function gatherRows(x: tf.Tensor2D, rows: Int32Array): tf.Tensor2D {
  const gather = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const input = args[0] as tf.Tensor2D;
    const save = args[1] as tf.GradSaveFunc;
    const index = tf.tensor2d(rows, [rows.length, 1], 'int32');
    // Saved, so that the engine keeps the index alive for the backward pass.
    save([index]);
    return {
      value: tf.gatherND(input, index),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => tf.scatterND(saved[0]!, dy, input.shape),
    };
  });
  return gather(x) as tf.Tensor2D;
}

/**
 * x [rows, in] W [in, out] + b with a hand-written gradient. Every product is a 2-D matMul (the
 * transpose flags are left to the backend; on wasm, see wasm-matmul.ts), and the bias gradient is
 * ones [1, rows] x dy: tfjs sums over a leading axis by transposing first, which on wasm costs
 * tens of times more than the product.
 */
const linear = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
  const [x, weight, bias, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.Tensor1D, tf.GradSaveFunc];
  save([x, weight]);
  return {
    value: tf.add(tf.matMul(x, weight), bias),
    gradFunc: (dy, saved) => {
      const [input, w] = saved as [tf.Tensor2D, tf.Tensor2D];
      const upstream = dy as tf.Tensor2D;
      return [
        tf.matMul(upstream, w, false, true),
        tf.matMul(input, upstream, true, false),
        columnSums(upstream),
      ];
    },
  };
}) as (x: tf.Tensor, weight: tf.Tensor, bias: tf.Tensor) => tf.Tensor2D;

/** Sums over the rows of a 2-D tensor, as a product with a row of ones. */
function columnSums(x: tf.Tensor2D): tf.Tensor1D {
  return tf.reshape(tf.matMul(tf.ones([1, x.shape[0]]), x), [x.shape[1]]);
}

/**
 * Embedding lookup whose gradient is a scatter-add done on the host: the wasm backend has no
 * gradient kernel for gather (UnsortedSegmentSum), and a one-hot matmul costs rows x vocabulary x
 * width both ways, which dominates a small model over a corpus vocabulary.
 */
function embeddingLookup(table: tf.Variable, ids: tf.Tensor2D, idValues: Int32Array): tf.Tensor2D {
  const [V, d] = table.shape as [number, number];
  const lookup = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [weights] = args as [tf.Tensor];
    return {
      value: tf.gather(weights, tf.reshape(ids, [-1])),
      gradFunc: (dy) => {
        const upstream = (dy as tf.Tensor).dataSync() as Float32Array;
        const grad = new Float32Array(V * d);
        for (let i = 0; i < idValues.length; i++) {
          const row = idValues[i]! * d;
          const from = i * d;
          for (let k = 0; k < d; k++) grad[row + k]! += upstream[from + k]!;
        }
        return [tf.tensor2d(grad, [V, d])];
      },
    };
  }) as (weights: tf.Tensor) => tf.Tensor2D;
  return lookup(table);
}

let suffixCounter = 0;
function uniqueSuffix(): number {
  return ++suffixCounter;
}

/**
 * Layer norm over the last axis, with the usual closed-form gradient (tfjs's gradient of moments
 * takes several more passes, and sums the gain and bias gradients over leading axes by transposing).
 */
function layerNorm(x: tf.Tensor, gain: tf.Tensor, bias: tf.Tensor): tf.Tensor {
  const width = x.shape[x.shape.length - 1]!;
  const rows = x.size / width;
  const norm = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
    const [input, g, b, save] = args as [tf.Tensor, tf.Tensor, tf.Tensor, tf.GradSaveFunc];
    const { mean, variance } = tf.moments(input, -1, true);
    const std = tf.sqrt(tf.add(variance, LN_EPS));
    const normalized = tf.div(tf.sub(input, mean), std);
    save([normalized, std, g]);
    return {
      value: tf.add(tf.mul(normalized, g), b),
      gradFunc: (dy, saved) => {
        const [xHat, stdSaved, gainSaved] = saved as [tf.Tensor, tf.Tensor, tf.Tensor];
        const upstream = dy as tf.Tensor;
        const dxHat = tf.mul(upstream, gainSaved);
        // dx = (dxHat - mean(dxHat) - xHat * mean(dxHat * xHat)) / std, means over the normalised axis.
        const dx = tf.div(
          tf.sub(
            tf.sub(dxHat, tf.mean(dxHat, -1, true)),
            tf.mul(xHat, tf.mean(tf.mul(dxHat, xHat), -1, true)),
          ),
          stdSaved,
        );
        const dy2d = tf.reshape(upstream, [rows, width]) as tf.Tensor2D;
        return [
          dx,
          columnSums(tf.reshape(tf.mul(upstream, xHat), [rows, width]) as tf.Tensor2D),
          columnSums(dy2d),
        ];
      },
    };
  }) as (input: tf.Tensor, g: tf.Tensor, b: tf.Tensor) => tf.Tensor;
  return norm(x, gain, bias);
}

const GELU_SCALE = Math.sqrt(2 / Math.PI);

/**
 * GELU, tanh approximation (GPT-2), written as x * sigmoid(2u) (= 0.5 x (1 + tanh u),
 * u = sqrt(2/pi) (x + 0.044715 x^3)): tfjs-wasm's tanh is scalar and many times slower than its
 * sigmoid. The gradient is written out: sigma + x sigma (1 - sigma) 2 du/dx.
 */
const gelu = tf.customGrad((...args: Array<tf.Tensor | tf.GradSaveFunc>) => {
  const [x, save] = args as [tf.Tensor, tf.GradSaveFunc];
  const squared = tf.mul(x, x);
  const sigma = tf.sigmoid(tf.mul(tf.mul(x, tf.add(tf.mul(squared, 0.044715), 1)), 2 * GELU_SCALE));
  save([x, squared, sigma]);
  return {
    value: tf.mul(x, sigma),
    gradFunc: (dy, saved) => {
      const [input, xSquared, s] = saved as [tf.Tensor, tf.Tensor, tf.Tensor];
      const twoDuDx = tf.add(tf.mul(xSquared, 2 * GELU_SCALE * 3 * 0.044715), 2 * GELU_SCALE);
      const derivative = tf.mul(s, tf.add(tf.mul(tf.mul(input, tf.sub(1, s)), twoDuDx), 1));
      return [tf.mul(dy as tf.Tensor, derivative)];
    },
  };
}) as (x: tf.Tensor) => tf.Tensor;

function causalMask(T: number): tf.Tensor2D {
  const data = new Float32Array(T * T);
  for (let i = 0; i < T; i++) for (let j = i + 1; j < T; j++) data[i * T + j] = MASKED;
  return tf.tensor2d(data, [T, T]);
}

/** [S, 1, m, P + m]: row s sees its first pastLengths[s] cached keys and the chunk causally. */
function chunkMask(S: number, m: number, P: number, pastLengths: readonly number[]): tf.Tensor4D {
  const width = P + m;
  const data = new Float32Array(S * m * width);
  for (let s = 0; s < S; s++) {
    const valid = pastLengths[s]!;
    for (let i = 0; i < m; i++) {
      const base = (s * m + i) * width;
      for (let j = valid; j < P; j++) data[base + j] = MASKED;
      for (let j = i + 1; j < m; j++) data[base + P + j] = MASKED;
    }
  }
  return tf.tensor4d(data, [S, 1, m, width]);
}
