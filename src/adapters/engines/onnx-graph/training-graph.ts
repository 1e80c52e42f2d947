import { floatValueInfo, int64ValueInfo, type OnnxAttribute, type OnnxGraph } from './proto';
import { GraphBuilder } from './graph-builder';
import { transformerWeightShapes, type TransformerGraphConfig } from './transformer-graph';

// The training step of the tfjs Transformer (src/adapters/tfjs/training.ts) as ONNX graphs:
// ONNX Runtime has no training API in onnxruntime-node, so the backward pass is written out here
// op by op, the same closed forms as transformer.ts's hand-written gradients (linear, layer norm,
// GELU, the tied embedding). `buildTrainingGraph` writes forward and backward as one graph and names
// the activations worth keeping; `cutGraph` (graph-split.ts) cuts it in two: the forward
// gives the log-probs the core's loss needs before the gradients can be, and hands the kept
// activations to the backward, which recomputes the cheap rest (norms, shapes, elementwise) and the
// attention weights (`recomputed`: cheaper than fetching them out of onnxruntime-node).

/** Graph input and output names besides the weights (`model.parameters[i].name`). */
export const TRAINING_NAMES = {
  /** int64 [rows, length]: the right-padded sequences. */
  ids: 'ids',
  /** float [length, length]: 0 where a query sees a key (itself and before), -1e9 elsewhere. */
  mask: 'causal_mask',
  /** int64 [places]: row * length + position - 1, the places whose logits predict a scored token. */
  places: 'places',
  /** int64 [places]: the scored tokens. */
  targets: 'targets',
  /** float scalar: the logits are divided by it (1 leaves them as they are). */
  temperature: 'temperature',
  /** float [places]: g, the core loss's gradient by each scored log-prob. */
  upstream: 'upstream',
  /** float scalar: the objective is sum g * logp - entropyWeight * (entropy sum). */
  entropyWeight: 'entropy_weight',
  /** float [places]: log-softmax(logits / temperature) of each scored token. */
  tokenLogProbs: 'token_log_probs',
  /** float scalar: the entropies of the places' distributions, summed. */
  entropySum: 'entropy_sum',
  /**
   * The objective's gradient by a weight, shaped as the weight; the token embedding's holds the tied
   * output projection's part only: its input gather's is `tokenRowsGradient`, for the caller to add.
   */
  gradient: (weight: string) => `grad.${weight}`,
  /**
   * float [rows * length, width]: the gradient by each input token's embedding row, which the caller
   * adds into the token embedding's gradient at the row's id (repeated ids add up). Not a scatter in
   * the graph: ScatterND with reduction 'add' splits its updates across ONNX Runtime's intra-op
   * threads, and at 2 threads a repeated token lost some of its additions (the embedding's gradient
   * 3-6% off, from run to run); one-hot ids times it would cost rows * length * vocabulary.
   */
  tokenRowsGradient: 'grad.token_rows',
} as const;

// tfjs's GELU as transformer.ts writes it: x * sigmoid(2k * x * (1 + 0.044715 x^2)), k = sqrt(2 / pi).
const GELU_K = Math.sqrt(2 / Math.PI);

/** The whole training graph and the activations its backward reads from its forward, kept rather than recomputed. */
export interface TrainingGraph extends OnnxGraph {
  saved: readonly string[];
  /**
   * Forward values the backward computes again from kept ones although that takes a matrix product
   * or a softmax: cheaper than fetching them out of the forward and feeding them back.
   */
  recomputed: readonly string[];
}

/**
 * Forward and backward of sum_t g_t * logp_t - w * sum_places entropy over one chunk of rows: the
 * full causal forward, logits only at the scored places (tied output projection), then each op's
 * gradient in reverse. Outputs: the scored log-probs, the entropy sum, one gradient per weight.
 * `saved`: per layer its input, queries, keys, values, attended values, the residual after
 * attention, the MLP's pre-activation and its sigmoid; the final norm's input, the log-probs and the
 * entropies. `recomputed`: per layer the attention weights (queries times keys, the mask, a
 * softmax). Everything else the backward reads is a matrix product away from none of them (a layer
 * norm, a transpose, one elementwise op).
 */
export function buildTrainingGraph(config: TransformerGraphConfig): TrainingGraph {
  const { contextLength: C, width: d, heads: H, layers } = config;
  const dh = d / H;
  const g = new GraphBuilder();
  const N = TRAINING_NAMES;
  const flat = g.ints('shape.flat', [-1, d]);
  const column = g.ints('shape.column', [-1, 1]);
  const zero = g.ints('index.zero', [0]);
  const lastAxis = g.ints('axis.last', [-1]);
  const scale = g.floatScalar('attention.scale', 1 / Math.sqrt(dh));
  const inverseWidth = g.floatScalar('norm.inverseWidth', 1 / d);
  const one = g.floatScalar('one', 1);
  const geluCubic = g.floatScalar('gelu.cubic', 0.044715);
  const geluScale = g.floatScalar('gelu.scale', 2 * GELU_K);
  const geluSlopeSquared = g.floatScalar('gelu.slopeSquared', 2 * GELU_K * 3 * 0.044715);

  const idsShape = g.op('Shape', [N.ids]);
  const length = g.op('Shape', [N.ids], { start: 1, end: 2 });
  const headShape = g.op('Concat', [idsShape, g.ints('shape.headDims', [H, dh])], { axis: 0 });
  const toHeads = (t: string) => g.op('Transpose', [g.op('Reshape', [t, headShape])], { perm: [0, 2, 1, 3] });
  const fromHeads = (t: string) => g.op('Reshape', [g.op('Transpose', [t], { perm: [0, 2, 1, 3] }), flat]);
  const swapLast = (t: string) => g.op('Transpose', [t], { perm: [0, 1, 3, 2] });
  // Column sums of a [rows, n] matrix as a row of ones times it: a matrix-vector product reads it
  // once, where ReduceSum over the first axis took 0.1-0.45 ms a call (26 of its 34 calls a step
  // were [2048, 128]). `ones`: onesRow of the matrix's row count.
  const vector = g.ints('shape.vector', [-1]);
  const oneFloat = g.floats('ones.one', [1]);
  const oneInt = g.ints('shape.one', [1]);
  /** A [1, rows] row of ones; `rows` an int64 [1]. */
  const onesRow = (rows: string) => g.op('Expand', [oneFloat, g.op('Concat', [oneInt, rows], { axis: 0 })]);
  const columnSums = (t: string, ones: string) => g.op('Reshape', [g.op('MatMul', [ones, t]), vector]);
  /** ONNX Runtime's FusedMatMul: alpha * op(a) op(b), op a transpose of the last two axes where asked. */
  const fusedMatMul = (a: string, b: string, attributes: Record<string, OnnxAttribute>) =>
    g.op('FusedMatMul', [a, b], attributes, undefined, 'com.microsoft');
  const rowMeans = (t: string) =>
    g.op('Mul', [g.op('ReduceSum', [t, lastAxis], { keepdims: 1 }), inverseWidth]);
  const linear = (x: string, weight: string, bias: string) =>
    g.op('Add', [g.op('MatMul', [x, weight]), bias]);
  const gradient = (weight: string, value: string) =>
    g.op('Identity', [value], undefined, N.gradient(weight));

  interface Norm {
    input: string;
    output: string;
    mean: string;
    inverseStd: string;
    gain: string;
    bias: string;
  }
  const layerNorm = (input: string, gain: string, bias: string): Norm => {
    const [output, mean, inverseStd] = g.ops('LayerNormalization', [input, gain, bias], 3, {
      axis: -1,
      epsilon: { float: config.layerNormEpsilon },
    }) as [string, string, string];
    return { input, output, mean, inverseStd, gain, bias };
  };
  /** dx = (dxHat - mean(dxHat) - xHat * mean(dxHat * xHat)) / std, as transformer.ts's layerNorm gradient; records the gain and bias gradients. */
  const layerNormBackward = (norm: Norm, upstream: string, ones: string): string => {
    const normalized = g.op('Mul', [g.op('Sub', [norm.input, norm.mean]), norm.inverseStd]);
    const dNormalized = g.op('Mul', [upstream, norm.gain]);
    gradient(norm.gain, columnSums(g.op('Mul', [upstream, normalized]), ones));
    gradient(norm.bias, columnSums(upstream, ones));
    const centred = g.op('Sub', [dNormalized, rowMeans(dNormalized)]);
    return g.op('Mul', [
      g.op('Sub', [centred, g.op('Mul', [normalized, rowMeans(g.op('Mul', [dNormalized, normalized]))])]),
      norm.inverseStd,
    ]);
  };
  /** y = x W + b, backward: returns dx and records dW = x^T dy, db = column sums of dy. */
  const linearBackward = (
    input: string,
    weight: string,
    bias: string,
    upstream: string,
    ones: string,
  ): string => {
    gradient(weight, g.op('Gemm', [input, upstream], { transA: 1 }));
    gradient(bias, columnSums(upstream, ones));
    return g.op('Gemm', [upstream, weight], { transB: 1 });
  };

  // Forward, as Transformer.forwardFull over [rows, length] with logits at the places only.
  const positions = g.op('Slice', ['positionEmbedding', zero, length, zero]);
  let x = g.op('Reshape', [
    g.op('Add', [g.op('Gather', ['tokenEmbedding', N.ids], { axis: 0 }), positions]),
    flat,
  ]);
  const layerSaves = [];
  const saved: string[] = [];
  const recomputed: string[] = [];
  // The backward's zeros [rows * length, width] take their shape from the first layer's input (kept), not the last's output.
  const tokensByWidth = g.op('Shape', [x]);
  for (let l = 0; l < layers; l++) {
    const p = `blocks.${l}`;
    const norm1 = layerNorm(x, `${p}.norm1.gain`, `${p}.norm1.bias`);
    const [q, k, v] = g.ops(
      'Split',
      [linear(norm1.output, `${p}.attention.qkv`, `${p}.attention.qkvBias`)],
      3,
      { axis: 1 },
    ) as [string, string, string];
    const queries = toHeads(q);
    const keys = toHeads(k);
    const values = toHeads(v);
    const scores = g.op('Add', [g.op('Mul', [g.op('MatMul', [queries, swapLast(keys)]), scale]), N.mask]);
    const weights = g.op('Softmax', [scores], { axis: -1 });
    const attended = g.op('MatMul', [weights, values]);
    const merged = fromHeads(attended);
    const x1 = g.op('Add', [x, linear(merged, `${p}.attention.out`, `${p}.attention.outBias`)]);
    const norm2 = layerNorm(x1, `${p}.norm2.gain`, `${p}.norm2.bias`);
    const up = linear(norm2.output, `${p}.mlp.up`, `${p}.mlp.upBias`);
    const squared = g.op('Mul', [up, up]);
    const sigma = g.op('Sigmoid', [
      g.op('Mul', [g.op('Mul', [up, g.op('Add', [g.op('Mul', [squared, geluCubic]), one])]), geluScale]),
    ]);
    const activated = g.op('Mul', [up, sigma]);
    layerSaves.push({
      norm1,
      queries,
      keys,
      values,
      weights,
      attended,
      merged,
      norm2,
      up,
      squared,
      sigma,
      activated,
    });
    // The attention weights ([rows, heads, length, length], 8 of this layer's 22 MB at 8 rows of 256
    // tokens) are computed again in the backward (a product, the mask, a softmax: 1.9 ms a layer at 2
    // threads) rather than fetched: onnxruntime-node copies each output into a new ArrayBuffer,
    // about 0.3 ms a MB with the allocation and the garbage collection that follow.
    saved.push(x, queries, keys, values, attended, x1, up, sigma);
    recomputed.push(weights);
    x = g.op('Add', [x1, linear(activated, `${p}.mlp.down`, `${p}.mlp.downBias`)]);
  }
  const atPlaces = g.op('Gather', [x, N.places], { axis: 0 });
  const finalNorm = layerNorm(atPlaces, 'finalNorm.gain', 'finalNorm.bias');
  const logits = g.op('Gemm', [finalNorm.output, 'tokenEmbedding'], { transB: 1 });
  const logProbs = g.op('LogSoftmax', [g.op('Div', [logits, N.temperature])], { axis: -1 });
  const targetColumn = g.op('Reshape', [N.targets, column]);
  g.op(
    'Reshape',
    [g.op('GatherElements', [logProbs, targetColumn], { axis: 1 }), vector],
    undefined,
    N.tokenLogProbs,
  );
  const probs = g.op('Exp', [logProbs]);
  const entropies = g.op('Neg', [
    g.op('ReduceSum', [g.op('Mul', [probs, logProbs]), lastAxis], { keepdims: 1 }),
  ]);
  g.op('ReduceSum', [entropies], { keepdims: 0 }, N.entropySum);
  saved.push(atPlaces, logProbs, entropies);

  // Backward. At the logits z / T: d(sum g logp_target)/dz = g (onehot - p); the entropy
  // H = -sum p logp has dH/dz = -p (logp + H), so -w H contributes w p (logp + H); both over T.
  // Written as p (w (logp + H) - g) with g added at each place's target: no one-hot matrix.
  const upstreamColumn = g.op('Reshape', [N.upstream, column]);
  const dScaled = g.op(
    'ScatterElements',
    [
      g.op('Mul', [
        probs,
        g.op('Sub', [g.op('Mul', [g.op('Add', [logProbs, entropies]), N.entropyWeight]), upstreamColumn]),
      ]),
      targetColumn,
      upstreamColumn,
    ],
    { axis: 1, reduction: { string: 'add' } },
  );
  const dLogits = g.op('Div', [dScaled, N.temperature]);
  // The tied projection: logits = n E^T, so dE = dLogits^T n (plus the input gather's, below).
  const dEmbeddingOut = g.op('Gemm', [dLogits, finalNorm.output], { transA: 1 });
  const dPlaces = layerNormBackward(
    finalNorm,
    g.op('MatMul', [dLogits, 'tokenEmbedding']),
    onesRow(g.op('Shape', [N.places])),
  );
  const tokenOnes = onesRow(g.op('Slice', [tokensByWidth, zero, oneInt]));
  // Places are distinct: a plain scatter into zeros is the gather's gradient.
  let dx = g.op('ScatterND', [
    g.op('ConstantOfShape', [tokensByWidth]),
    g.op('Reshape', [N.places, column]),
    dPlaces,
  ]);
  for (let l = layers - 1; l >= 0; l--) {
    const p = `blocks.${l}`;
    const layer = layerSaves[l]!;
    const dActivated = linearBackward(layer.activated, `${p}.mlp.down`, `${p}.mlp.downBias`, dx, tokenOnes);
    // GELU' = sigma + x sigma (1 - sigma) 2 du/dx, 2 du/dx = 2k (1 + 3 * 0.044715 x^2).
    const twoDuDx = g.op('Add', [g.op('Mul', [layer.squared, geluSlopeSquared]), geluScale]);
    const derivative = g.op('Mul', [
      layer.sigma,
      g.op('Add', [g.op('Mul', [g.op('Mul', [layer.up, g.op('Sub', [one, layer.sigma])]), twoDuDx]), one]),
    ]);
    const dUp = g.op('Mul', [dActivated, derivative]);
    const dx1 = g.op('Add', [
      dx,
      layerNormBackward(
        layer.norm2,
        linearBackward(layer.norm2.output, `${p}.mlp.up`, `${p}.mlp.upBias`, dUp, tokenOnes),
        tokenOnes,
      ),
    ]);
    const dAttended = toHeads(
      linearBackward(layer.merged, `${p}.attention.out`, `${p}.attention.outBias`, dx1, tokenOnes),
    );
    const dWeights = g.op('MatMul', [dAttended, swapLast(layer.values)]);
    // dValues = weights^T dAttended, computed transposed as dAttended^T weights: a transpose of the
    // head's [length, width] inside the product instead of the [length, length] weights (1.97 ms
    // against 0.7-1.0 ms a layer); its [rows, heads, width, length] goes to [rows, length, heads,
    // width] in the transpose fromHeads does anyway.
    const dValuesT = fusedMatMul(dAttended, layer.weights, { transA: 1 });
    // Softmax: dscores = a (da - sum_k da_k a_k), then the 1/sqrt(dh) scale; the mask is a constant.
    // sum_k da_k a_k = sum_k a_k (dAttended . v_k) = dAttended . attended: a sum over the head's
    // width instead of over every key (FlashAttention's D = rowsum(dO * O)). The scale is the
    // products' alpha below, not a pass over the scores.
    const rowDot = g.op('ReduceSum', [g.op('Mul', [dAttended, layer.attended]), lastAxis], { keepdims: 1 });
    const dScoresUnscaled = g.op('Mul', [layer.weights, g.op('Sub', [dWeights, rowDot])]);
    const dQueries = fusedMatMul(dScoresUnscaled, layer.keys, { alpha: { float: 1 / Math.sqrt(dh) } });
    // dKeys = dscores^T queries, transposed as above: queries^T dscores.
    const dKeysT = fusedMatMul(layer.queries, dScoresUnscaled, {
      transA: 1,
      alpha: { float: 1 / Math.sqrt(dh) },
    });
    const fromHeadsT = (t: string) => g.op('Reshape', [g.op('Transpose', [t], { perm: [0, 3, 1, 2] }), flat]);
    const dQkv = g.op('Concat', [fromHeads(dQueries), fromHeadsT(dKeysT), fromHeadsT(dValuesT)], { axis: 1 });
    dx = g.op('Add', [
      dx1,
      layerNormBackward(
        layer.norm1,
        linearBackward(layer.norm1.output, `${p}.attention.qkv`, `${p}.attention.qkvBias`, dQkv, tokenOnes),
        tokenOnes,
      ),
    ]);
  }
  // Embeddings: the tied projection's part of the token embedding's gradient here, the input
  // gather's rows as their own output (tokenRowsGradient); the positions 0..length-1 sum over rows.
  gradient('tokenEmbedding', dEmbeddingOut);
  g.op('Identity', [dx], undefined, N.tokenRowsGradient);
  const dPositions = g.op(
    'ReduceSum',
    [g.op('Reshape', [dx, g.op('Concat', [idsShape, g.ints('shape.width', [d])], { axis: 0 })]), zero],
    { keepdims: 0 },
  );
  const pads = g.op(
    'Concat',
    [g.ints('pads.begin', [0, 0]), g.op('Sub', [g.ints('context', [C]), length]), zero],
    { axis: 0 },
  );
  gradient('positionEmbedding', g.op('Pad', [dPositions, pads]));

  const weights = transformerWeightShapes(config);
  return {
    saved,
    recomputed,
    name: 'searcher-rl.tfjs-transformer.training',
    nodes: g.nodes,
    initializers: g.initializers,
    inputs: [
      ...weights.map((w) => floatValueInfo(w.name, w.shape)),
      int64ValueInfo(N.ids, ['rows', 'length']),
      floatValueInfo(N.mask, ['length', 'length']),
      int64ValueInfo(N.places, ['places']),
      int64ValueInfo(N.targets, ['places']),
      floatValueInfo(N.temperature, []),
      floatValueInfo(N.upstream, ['places']),
      floatValueInfo(N.entropyWeight, []),
    ],
    outputs: [
      floatValueInfo(N.tokenLogProbs, ['places']),
      floatValueInfo(N.entropySum, []),
      ...weights.map((w) => floatValueInfo(N.gradient(w.name), w.shape)),
      floatValueInfo(N.tokenRowsGradient, ['tokens', d]),
    ],
  };
}
