import { GraphBuilder } from './graph-builder';
import { floatValueInfo, int64ValueInfo, type OnnxGraph } from './proto';

// The tfjs Transformer's chunk forward (src/adapters/tfjs/transformer.ts, forwardChunk) as an ONNX
// graph at opset 17: standard ops op for op where the rounding matters, and ONNX Runtime's
// FastGelu for the GELU. The weights are graph
// inputs named as the Transformer's parameters, so that one session serves every update: rollouts
// feed the live weights. Nothing here imports tfjs: the model's shape comes in as plain numbers.

export const ONNX_OPSET = 17;

/** The GPT-style decoder's sizes (the tfjs policy's TransformerConfig is this type). */
export interface TransformerGraphShape {
  vocabSize: number;
  /** Longest sequence (prompt + turns + observations) the model can see. */
  contextLength: number;
  layers: number;
  /** Model width (d_model). */
  width: number;
  heads: number;
  /** Hidden width of the MLP (default 4 * width). */
  mlpWidth: number;
}

/** The sizes and the layer-norm epsilon the model was trained with (the graph's LayerNormalization uses the same). */
export interface TransformerGraphConfig extends TransformerGraphShape {
  layerNormEpsilon: number;
}

/**
 * The key/value cache's inputs and outputs per layer, named alike in every decoding graph (the
 * transformer's here, the Llama family's in engines/llama/llama-graph.ts): the past keys and
 * values a step attends to, and the present ones it adds.
 */
export const KV_CACHE_NAMES = {
  pastKeys: (layer: number) => `past_keys.${layer}`,
  pastValues: (layer: number) => `past_values.${layer}`,
  presentKeys: (layer: number) => `present_keys.${layer}`,
  presentValues: (layer: number) => `present_values.${layer}`,
} as const;

/** Graph input and output names besides the weights (`model.parameters[i].name`). */
export const ONNX_NAMES = {
  /** int64 [rows, chunk]: the new tokens, right-padded. */
  tokens: 'tokens',
  /** int64 [rows, chunk]: their positions. */
  positions: 'positions',
  /** float [rows, 1, chunk, past + chunk]: 0 where a query sees a key, -1e9 elsewhere. */
  mask: 'attention_mask',
  /** int64 [rows]: row * chunk + the index of the row's last real token in the chunk. */
  lastIndex: 'last_index',
  /** float scalar: logits are divided by it before the log-softmax (1 leaves them as they are). */
  temperature: 'temperature',
  /**
   * The cache per layer: past keys and values float [rows, heads, past, headWidth] (past may hold
   * masked slots); present ones [rows, heads, chunk, headWidth], the chunk's own keys and values.
   */
  ...KV_CACHE_NAMES,
  /** float [rows, vocabulary]: log-softmax(logits / temperature) at each row's last token. */
  logProbs: 'log_probs',
  /**
   * float [2 * layers * rows, heads, chunk, headWidth]: every layer's present keys then values
   * (layer 0's keys, layer 0's values, layer 1's keys, ...) in one output: one copy out of ONNX
   * Runtime per forward instead of 2 * layers.
   */
  present: 'present',
} as const;

/** The weights' names and shapes, in the Transformer's parameter order. */
export function transformerWeightShapes(
  config: TransformerGraphShape,
): Array<{ name: string; shape: number[] }> {
  const { vocabSize: V, contextLength: C, width: d, mlpWidth: m, layers } = config;
  const shapes = [
    { name: 'tokenEmbedding', shape: [V, d] },
    { name: 'positionEmbedding', shape: [C, d] },
  ];
  for (let l = 0; l < layers; l++) {
    const p = `blocks.${l}`;
    shapes.push(
      { name: `${p}.norm1.gain`, shape: [d] },
      { name: `${p}.norm1.bias`, shape: [d] },
      { name: `${p}.attention.qkv`, shape: [d, 3 * d] },
      { name: `${p}.attention.qkvBias`, shape: [3 * d] },
      { name: `${p}.attention.out`, shape: [d, d] },
      { name: `${p}.attention.outBias`, shape: [d] },
      { name: `${p}.norm2.gain`, shape: [d] },
      { name: `${p}.norm2.bias`, shape: [d] },
      { name: `${p}.mlp.up`, shape: [d, m] },
      { name: `${p}.mlp.upBias`, shape: [m] },
      { name: `${p}.mlp.down`, shape: [m, d] },
      { name: `${p}.mlp.downBias`, shape: [d] },
    );
  }
  shapes.push({ name: 'finalNorm.gain', shape: [d] }, { name: 'finalNorm.bias', shape: [d] });
  return shapes;
}

/** Which forward `buildTransformerGraph` writes. */
export interface TransformerGraphOptions {
  /**
   * One new token per row (a decode step): no causal mask inside the chunk, no head transposes (a
   * token's heads are already laid out [rows, heads, 1, headWidth]) and no gather of the rows' last
   * tokens; the inputs are the same but `last_index`. A decode step runs about 29 operators a layer
   * instead of the chunk forward's 35, and ONNX Runtime's time per operator is most of a step's.
   */
  oneToken?: boolean;
}

/**
 * The chunk forward: token + position embeddings, `layers` pre-norm blocks attending to the past
 * keys/values (masked) and to the chunk causally, then the final norm and the tied output
 * projection at each row's last real token, log-softmax at a temperature. GELU is ONNX Runtime's
 * FastGelu (com.microsoft): tfjs's tanh approximation in one operator instead of seven, the same
 * function to float rounding (log-probs within 1e-5 of tfjs's; onnx-rollouts.test.ts).
 */
export function buildTransformerGraph(
  config: TransformerGraphConfig,
  options: TransformerGraphOptions = {},
): OnnxGraph {
  const { vocabSize: V, width: d, heads: H, layers } = config;
  const oneToken = options.oneToken ?? false;
  const dh = d / H;
  const g = new GraphBuilder();
  const N = ONNX_NAMES;
  const flatShape = g.ints('shape.flat', [-1, d]);
  const scale = g.floatScalar('attention.scale', 1 / Math.sqrt(dh));
  const zero = g.ints('index.zero', [0]);
  const keyAxis = g.ints('axis.keys', [3]);
  // The one-token forward's shapes: a query as a column, a past's scores as a row.
  const token = oneToken
    ? {
        lastAxis: g.ints('axis.last', [-1]),
        columnHeads: g.ints('shape.columnHeads', [0, 0, dh, 1]),
        rowHeads: g.ints('shape.rowHeads', [0, 0, 1, -1]),
      }
    : null;

  const layerNorm = (x: string, gain: string, bias: string) =>
    g.op('LayerNormalization', [x, gain, bias], { axis: -1, epsilon: { float: config.layerNormEpsilon } });
  const linear = (x: string, weight: string, bias: string) =>
    g.op('Add', [g.op('MatMul', [x, weight]), bias]);
  // tfjs's GELU, 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (transformer.ts writes it as x * sigmoid(2 * that inner)).
  const gelu = (x: string) => g.op('FastGelu', [x], undefined, undefined, 'com.microsoft');
  // The residual stream is [rows * chunk, width], as tfjs's 2-D matmuls: ONNX Runtime runs a 3-D
  // activation times a 2-D weight as one matrix-vector product per row when the chunk is one token.
  // A chunk's [rows * chunk, width] is [rows, chunk, heads, headWidth], transposed to heads first;
  // one token's is [rows, heads, 1, headWidth] as it is.
  const headShape = oneToken
    ? g.ints('shape.tokenHeads', [-1, H, 1, dh])
    : g.op('Concat', [g.op('Shape', [N.tokens]), g.ints('shape.headDims', [H, dh])], { axis: 0 });
  const toHeads = (t: string, output?: string) =>
    oneToken
      ? g.op('Reshape', [t, headShape], undefined, output)
      : g.op('Transpose', [g.op('Reshape', [t, headShape])], { perm: [0, 2, 1, 3] }, output);
  const fromHeads = (t: string) =>
    g.op('Reshape', [oneToken ? t : g.op('Transpose', [t], { perm: [0, 2, 1, 3] }), flatShape]);

  const embedded = g.op('Add', [
    g.op('Gather', ['tokenEmbedding', N.tokens], { axis: 0 }),
    g.op('Gather', ['positionEmbedding', N.positions], { axis: 0 }),
  ]);
  let x = g.op('Reshape', [embedded, flatShape]);
  const pastLength = g.op('Shape', [N.pastKeys(0)], { start: 2, end: 3 });
  const keyCount = g.op('Shape', [N.mask], { start: 3, end: 4 });
  for (let l = 0; l < layers; l++) {
    const p = `blocks.${l}`;
    const h = layerNorm(x, `${p}.norm1.gain`, `${p}.norm1.bias`);
    const [q, k, v] = g.ops('Split', [linear(h, `${p}.attention.qkv`, `${p}.attention.qkvBias`)], 3, {
      axis: 1,
    }) as [string, string, string];
    const queries = toHeads(q);
    const keys = toHeads(k, N.presentKeys(l));
    const values = toHeads(v, N.presentValues(l));
    // Scores against the past and against the chunk, joined before one softmax (as tfjs's concatenated
    // keys); the past is never copied into a concatenation, only read.
    // One token: the past keys times the query as a column, [rows, heads, past, 1], is the same
    // memory as its scores' row [rows, heads, 1, past]; ONNX Runtime packs the matrix product's
    // right side, here a column instead of every row's and head's past keys.
    const pastScores = token
      ? g.op('Reshape', [
          g.op('MatMul', [N.pastKeys(l), g.op('Reshape', [queries, token.columnHeads])]),
          token.rowHeads,
        ])
      : g.op('MatMul', [queries, g.op('Transpose', [N.pastKeys(l)], { perm: [0, 1, 3, 2] })]);
    // One token's score against its own key is a dot product: elementwise, not a batch of
    // rows * heads one-by-one matrix products (ONNX Runtime's cost per batch entry is most of those).
    const chunkScores = token
      ? g.op('ReduceSum', [g.op('Mul', [queries, keys]), token.lastAxis], { keepdims: 1 })
      : g.op('MatMul', [queries, g.op('Transpose', [keys], { perm: [0, 1, 3, 2] })]);
    const scores = g.op('Add', [
      g.op('Mul', [g.op('Concat', [pastScores, chunkScores], { axis: 3 }), scale]),
      N.mask,
    ]);
    const weights = g.op('Softmax', [scores], { axis: -1 });
    const pastWeights = g.op('Slice', [weights, zero, pastLength, keyAxis]);
    const chunkWeights = g.op('Slice', [weights, pastLength, keyCount, keyAxis]);
    const attended = g.op('Add', [
      g.op('MatMul', [pastWeights, N.pastValues(l)]),
      oneToken ? g.op('Mul', [chunkWeights, values]) : g.op('MatMul', [chunkWeights, values]),
    ]);
    const merged = fromHeads(attended);
    const x1 = g.op('Add', [x, linear(merged, `${p}.attention.out`, `${p}.attention.outBias`)]);
    const h2 = layerNorm(x1, `${p}.norm2.gain`, `${p}.norm2.bias`);
    x = g.op('Add', [
      x1,
      linear(gelu(linear(h2, `${p}.mlp.up`, `${p}.mlp.upBias`)), `${p}.mlp.down`, `${p}.mlp.downBias`),
    ]);
  }
  // One token per row: the rows are the last tokens.
  const last = oneToken ? x : g.op('Gather', [x, N.lastIndex], { axis: 0 });
  const normed = layerNorm(last, 'finalNorm.gain', 'finalNorm.bias');
  const logits = g.op('Gemm', [normed, 'tokenEmbedding'], { transB: 1 });
  g.op('LogSoftmax', [g.op('Div', [logits, N.temperature])], { axis: -1 }, N.logProbs);
  g.op(
    'Concat',
    Array.from({ length: layers }, (_, l) => [N.presentKeys(l), N.presentValues(l)]).flat(),
    { axis: 0 },
    N.present,
  );

  const perLayer = (name: (l: number) => string, dims: Array<number | string>) =>
    Array.from({ length: layers }, (_, l) => floatValueInfo(name(l), dims));
  return {
    name: oneToken ? 'searcher-rl.tfjs-transformer.token' : 'searcher-rl.tfjs-transformer.chunk',
    nodes: g.nodes,
    initializers: g.initializers,
    inputs: [
      ...transformerWeightShapes(config).map((w) => floatValueInfo(w.name, w.shape)),
      int64ValueInfo(N.tokens, ['rows', oneToken ? 1 : 'chunk']),
      int64ValueInfo(N.positions, ['rows', oneToken ? 1 : 'chunk']),
      floatValueInfo(N.mask, ['rows', 1, oneToken ? 1 : 'chunk', 'keys']),
      ...(oneToken ? [] : [int64ValueInfo(N.lastIndex, ['rows'])]),
      floatValueInfo(N.temperature, []),
      ...perLayer(N.pastKeys, ['rows', H, 'past', dh]),
      ...perLayer(N.pastValues, ['rows', H, 'past', dh]),
    ],
    outputs: [
      floatValueInfo(N.logProbs, ['rows', V]),
      floatValueInfo(N.present, ['layersRows', H, oneToken ? 1 : 'chunk', dh]),
    ],
  };
}
