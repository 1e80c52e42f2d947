import { ONNX_FLOAT, ONNX_INT64, type OnnxGraph, type OnnxValueInfo } from './proto';
import { GraphBuilder, transformerWeightShapes, type TransformerGraphConfig } from './transformer-graph';

// The training step of the tfjs Transformer (src/adapters/tfjs/training.ts) as ONNX graphs:
// ONNX Runtime has no training API in onnxruntime-node, so the backward pass is written out here
// op by op, the same closed forms as transformer.ts's hand-written gradients (linear, layer norm,
// GELU, the tied embedding). `buildTrainingGraph` writes forward and backward as one graph and names
// the activations worth keeping; `splitTrainingGraph` (graph-split.ts) cuts it in two: the forward
// gives the log-probs the core's loss needs before the gradients can be, and hands the kept
// activations to the backward, which recomputes only the cheap rest (norms, shapes, elementwise).

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
  /** The objective's gradient by a weight, shaped as the weight. */
  gradient: (weight: string) => `grad.${weight}`,
} as const;

// tfjs's GELU as transformer.ts writes it: x * sigmoid(2k * x * (1 + 0.044715 x^2)), k = sqrt(2 / pi).
const GELU_K = Math.sqrt(2 / Math.PI);

/** The whole training graph and the activations its backward reads from its forward, kept rather than recomputed. */
export interface TrainingGraph extends OnnxGraph {
  saved: readonly string[];
}

/**
 * Forward and backward of sum_t g_t * logp_t - w * sum_places entropy over one chunk of rows: the
 * full causal forward, logits only at the scored places (tied output projection), then each op's
 * gradient in reverse. Outputs: the scored log-probs, the entropy sum, one gradient per weight.
 * `saved`: per layer its input, queries, keys, values, attention weights, attended values, the
 * residual after attention, the MLP's pre-activation and its sigmoid; the final norm's input, the
 * log-probs and the entropies. Everything else the backward reads is a matrix product away from
 * none of them (a layer norm, a transpose, one elementwise op).
 */
export function buildTrainingGraph(config: TransformerGraphConfig): TrainingGraph {
  const { vocabSize: V, contextLength: C, width: d, heads: H, layers } = config;
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
  const columnSums = (t: string) => g.op('ReduceSum', [t, zero], { keepdims: 0 });
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
  const layerNormBackward = (norm: Norm, upstream: string): string => {
    const normalized = g.op('Mul', [g.op('Sub', [norm.input, norm.mean]), norm.inverseStd]);
    const dNormalized = g.op('Mul', [upstream, norm.gain]);
    gradient(norm.gain, columnSums(g.op('Mul', [upstream, normalized])));
    gradient(norm.bias, columnSums(upstream));
    const centred = g.op('Sub', [dNormalized, rowMeans(dNormalized)]);
    return g.op('Mul', [
      g.op('Sub', [centred, g.op('Mul', [normalized, rowMeans(g.op('Mul', [dNormalized, normalized]))])]),
      norm.inverseStd,
    ]);
  };
  /** y = x W + b, backward: returns dx and records dW = x^T dy, db = column sums of dy. */
  const linearBackward = (input: string, weight: string, bias: string, upstream: string): string => {
    gradient(weight, g.op('Gemm', [input, upstream], { transA: 1 }));
    gradient(bias, columnSums(upstream));
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
      p,
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
    saved.push(x, queries, keys, values, weights, attended, x1, up, sigma);
    x = g.op('Add', [x1, linear(activated, `${p}.mlp.down`, `${p}.mlp.downBias`)]);
  }
  const atPlaces = g.op('Gather', [x, N.places], { axis: 0 });
  const finalNorm = layerNorm(atPlaces, 'finalNorm.gain', 'finalNorm.bias');
  const logits = g.op('Gemm', [finalNorm.output, 'tokenEmbedding'], { transB: 1 });
  const logProbs = g.op('LogSoftmax', [g.op('Div', [logits, N.temperature])], { axis: -1 });
  const targetColumn = g.op('Reshape', [N.targets, column]);
  g.op(
    'Reshape',
    [g.op('GatherElements', [logProbs, targetColumn], { axis: 1 }), g.ints('shape.vector', [-1])],
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
  const onehot = g.op('OneHot', [N.targets, g.ints('vocabulary', [V]), g.floats('onehot.values', [0, 1])], {
    axis: -1,
  });
  const dScaled = g.op('Add', [
    g.op('Mul', [g.op('Reshape', [N.upstream, column]), g.op('Sub', [onehot, probs])]),
    g.op('Mul', [g.op('Mul', [probs, N.entropyWeight]), g.op('Add', [logProbs, entropies])]),
  ]);
  const dLogits = g.op('Div', [dScaled, N.temperature]);
  // The tied projection: logits = n E^T, so dE = dLogits^T n (plus the input gather's, below).
  const dEmbeddingOut = g.op('Gemm', [dLogits, finalNorm.output], { transA: 1 });
  const dPlaces = layerNormBackward(finalNorm, g.op('MatMul', [dLogits, 'tokenEmbedding']));
  // Places are distinct: a plain scatter into zeros is the gather's gradient.
  let dx = g.op('ScatterND', [
    g.op('ConstantOfShape', [tokensByWidth]),
    g.op('Reshape', [N.places, column]),
    dPlaces,
  ]);
  for (let l = layers - 1; l >= 0; l--) {
    const {
      p,
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
    } = layerSaves[l]!;
    const dActivated = linearBackward(activated, `${p}.mlp.down`, `${p}.mlp.downBias`, dx);
    // GELU' = sigma + x sigma (1 - sigma) 2 du/dx, 2 du/dx = 2k (1 + 3 * 0.044715 x^2).
    const twoDuDx = g.op('Add', [g.op('Mul', [squared, geluSlopeSquared]), geluScale]);
    const derivative = g.op('Mul', [
      sigma,
      g.op('Add', [g.op('Mul', [g.op('Mul', [up, g.op('Sub', [one, sigma])]), twoDuDx]), one]),
    ]);
    const dUp = g.op('Mul', [dActivated, derivative]);
    const dx1 = g.op('Add', [
      dx,
      layerNormBackward(norm2, linearBackward(norm2.output, `${p}.mlp.up`, `${p}.mlp.upBias`, dUp)),
    ]);
    const dAttended = toHeads(linearBackward(merged, `${p}.attention.out`, `${p}.attention.outBias`, dx1));
    const dWeights = g.op('MatMul', [dAttended, swapLast(values)]);
    const dValues = g.op('MatMul', [swapLast(weights), dAttended]);
    // Softmax: dscores = a (da - sum_k da_k a_k), then the 1/sqrt(dh) scale; the mask is a constant.
    // sum_k da_k a_k = sum_k a_k (dAttended . v_k) = dAttended . attended: a sum over the head's
    // width instead of over every key (FlashAttention's D = rowsum(dO * O)).
    const rowDot = g.op('ReduceSum', [g.op('Mul', [dAttended, attended]), lastAxis], { keepdims: 1 });
    const dScores = g.op('Mul', [g.op('Mul', [weights, g.op('Sub', [dWeights, rowDot])]), scale]);
    const dQueries = g.op('MatMul', [dScores, keys]);
    const dKeys = g.op('MatMul', [swapLast(dScores), queries]);
    const dQkv = g.op('Concat', [fromHeads(dQueries), fromHeads(dKeys), fromHeads(dValues)], { axis: 1 });
    dx = g.op('Add', [
      dx1,
      layerNormBackward(
        norm1,
        linearBackward(norm1.output, `${p}.attention.qkv`, `${p}.attention.qkvBias`, dQkv),
      ),
    ]);
  }
  // Embeddings: the token gather scatters back with repeats added; the positions 0..length-1 sum over rows.
  const dEmbeddingIn = g.op(
    'ScatterND',
    [g.op('ConstantOfShape', [g.op('Shape', ['tokenEmbedding'])]), g.op('Reshape', [N.ids, column]), dx],
    { reduction: { string: 'add' } },
  );
  gradient('tokenEmbedding', g.op('Add', [dEmbeddingOut, dEmbeddingIn]));
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

  const float = (name: string, dims: Array<number | string>): OnnxValueInfo => ({
    name,
    type: ONNX_FLOAT,
    dims,
  });
  const int64 = (name: string, dims: Array<number | string>): OnnxValueInfo => ({
    name,
    type: ONNX_INT64,
    dims,
  });
  const weights = transformerWeightShapes(config);
  return {
    saved,
    name: 'searcher-rl.tfjs-transformer.training',
    nodes: g.nodes,
    initializers: g.initializers,
    inputs: [
      ...weights.map((w) => float(w.name, w.shape)),
      int64(N.ids, ['rows', 'length']),
      float(N.mask, ['length', 'length']),
      int64(N.places, ['places']),
      int64(N.targets, ['places']),
      float(N.temperature, []),
      float(N.upstream, ['places']),
      float(N.entropyWeight, []),
    ],
    outputs: [
      float(N.tokenLogProbs, ['places']),
      float(N.entropySum, []),
      ...weights.map((w) => float(N.gradient(w.name), w.shape)),
    ],
  };
}
