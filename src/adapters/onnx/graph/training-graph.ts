import { ONNX_FLOAT, ONNX_INT64, type OnnxGraph, type OnnxNode, type OnnxValueInfo } from './proto';
import { GraphBuilder, transformerWeightShapes, type TransformerGraphConfig } from './transformer-graph';

// The training step of the tfjs Transformer (src/adapters/tfjs/training.ts) as ONNX graphs:
// ONNX Runtime has no training API in onnxruntime-node, so the backward pass is written out here
// op by op, the same closed forms as transformer.ts's hand-written gradients (linear, layer norm,
// GELU, the tied embedding). The graph computes forward and backward in one run; its forward part
// alone (`forwardOnlyGraph`) gives the log-probs the core's loss needs before the gradients can be.

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

/**
 * Forward and backward of sum_t g_t * logp_t - w * sum_places entropy over one chunk of rows: the
 * full causal forward, logits only at the scored places (tied output projection), then each op's
 * gradient in reverse. Outputs: the scored log-probs, the entropy sum, one gradient per weight.
 */
export function buildTrainingGraph(config: TransformerGraphConfig): OnnxGraph {
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
  const saved = [];
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
    const merged = fromHeads(g.op('MatMul', [weights, values]));
    const x1 = g.op('Add', [x, linear(merged, `${p}.attention.out`, `${p}.attention.outBias`)]);
    const norm2 = layerNorm(x1, `${p}.norm2.gain`, `${p}.norm2.bias`);
    const up = linear(norm2.output, `${p}.mlp.up`, `${p}.mlp.upBias`);
    const squared = g.op('Mul', [up, up]);
    const sigma = g.op('Sigmoid', [
      g.op('Mul', [g.op('Mul', [up, g.op('Add', [g.op('Mul', [squared, geluCubic]), one])]), geluScale]),
    ]);
    const activated = g.op('Mul', [up, sigma]);
    saved.push({ p, norm1, queries, keys, values, weights, merged, norm2, up, squared, sigma, activated });
    x = g.op('Add', [x1, linear(activated, `${p}.mlp.down`, `${p}.mlp.downBias`)]);
  }
  const residual = x;
  const finalNorm = layerNorm(
    g.op('Gather', [residual, N.places], { axis: 0 }),
    'finalNorm.gain',
    'finalNorm.bias',
  );
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
    g.op('ConstantOfShape', [g.op('Shape', [residual])]),
    g.op('Reshape', [N.places, column]),
    dPlaces,
  ]);
  for (let l = layers - 1; l >= 0; l--) {
    const { p, norm1, queries, keys, values, weights, merged, norm2, up, squared, sigma, activated } =
      saved[l]!;
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
    // Softmax: dscores = a (da - sum(da a)), then the 1/sqrt(dh) scale; the mask is a constant.
    const dScores = g.op('Mul', [
      g.op('Mul', [
        weights,
        g.op('Sub', [
          dWeights,
          g.op('ReduceSum', [g.op('Mul', [dWeights, weights]), lastAxis], { keepdims: 1 }),
        ]),
      ]),
      scale,
    ]);
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

/**
 * The nodes the scored log-probs and the entropy sum need, alone: the loss reads them before
 * the training graph can run. (Handing this forward's activations to a backward-only graph
 * instead measured slower: copying them out of and back into ONNX Runtime costs more than
 * recomputing them.)
 */
export function forwardOnlyGraph(graph: OnnxGraph): OnnxGraph {
  const producer = new Map<string, OnnxNode>();
  for (const node of graph.nodes) for (const output of node.outputs) producer.set(output, node);
  const needed = new Set<OnnxNode>();
  const visit = (value: string) => {
    const node = producer.get(value);
    if (!node || needed.has(node)) return;
    needed.add(node);
    node.inputs.forEach(visit);
  };
  const outputs = graph.outputs.filter(
    (v) => v.name === TRAINING_NAMES.tokenLogProbs || v.name === TRAINING_NAMES.entropySum,
  );
  for (const output of outputs) visit(output.name);
  const nodes = graph.nodes.filter((n) => needed.has(n));
  const read = new Set(nodes.flatMap((n) => n.inputs));
  return {
    name: `${graph.name}.forward`,
    nodes,
    initializers: graph.initializers.filter((t) => read.has(t.name)),
    inputs: graph.inputs.filter((v) => read.has(v.name)),
    outputs,
  };
}
