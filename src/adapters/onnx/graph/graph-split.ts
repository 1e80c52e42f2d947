import { ONNX_FLOAT, type OnnxGraph, type OnnxNode, type OnnxValueInfo } from './proto';
import { TRAINING_NAMES, type TrainingGraph } from './training-graph';

// The training graph cut at its kept activations. The loss needs the log-probs before it can give
// the backward its g, so the forward and the backward are two ONNX Runtime runs; before this cut the
// second run recomputed the whole forward (a third of the step). Feeding the kept activations back
// costs nothing (onnxruntime-node reads a Float32Array input in place); fetching them is a copy into
// a new ArrayBuffer (about 0.3 ms a MB with the allocation and the garbage collection after), so a
// value that is cheap to compute again from kept ones (the attention weights) is not fetched.

/** Op types the backward may compute again from kept values: no matrix product, no softmax. */
const RECOMPUTABLE = new Set([
  'Shape',
  'Slice',
  'Concat',
  'Reshape',
  'Transpose',
  'LayerNormalization',
  'Mul',
  'Exp',
]);

export interface SplitTrainingGraphs {
  /** Weights, ids, mask, places, targets, temperature -> the scored log-probs, the entropy sum and the kept activations. */
  forward: OnnxGraph;
  /** Weights, kept activations, ids, places, targets, temperature, g, entropy weight -> one gradient per weight. */
  backward: OnnxGraph;
  /** The kept activations, in the order the forward outputs them. */
  saved: readonly string[];
  /** Forward nodes the backward runs again (from kept values). */
  recomputed: readonly OnnxNode[];
}

/** A float activation of unstated shape (a kept value between the two graphs). */
const activation = (name: string): OnnxValueInfo => ({ name, type: ONNX_FLOAT, dims: null });

/** The nodes `outputs` need, in graph order, not looking past `stopAt`. */
function closure(graph: OnnxGraph, outputs: readonly string[], stopAt: ReadonlySet<string>): Set<OnnxNode> {
  const producer = new Map<string, OnnxNode>();
  for (const node of graph.nodes) for (const output of node.outputs) producer.set(output, node);
  const needed = new Set<OnnxNode>();
  const visit = (value: string) => {
    const node = producer.get(value);
    if (!node || needed.has(node) || stopAt.has(value)) return;
    needed.add(node);
    node.inputs.forEach(visit);
  };
  outputs.forEach(visit);
  return needed;
}

/** The graph of `nodes` (in `graph`'s order) with the inputs and initializers they read and the given outputs. */
function subgraph(
  graph: OnnxGraph,
  name: string,
  nodes: Set<OnnxNode>,
  extraInputs: readonly string[],
  outputs: OnnxGraph['outputs'],
): OnnxGraph {
  const kept = graph.nodes.filter((n) => nodes.has(n));
  const read = new Set(kept.flatMap((n) => n.inputs));
  return {
    name,
    nodes: kept,
    initializers: graph.initializers.filter((t) => read.has(t.name)),
    inputs: [
      ...graph.inputs.filter((v) => read.has(v.name)),
      ...extraInputs.filter((v) => read.has(v)).map(activation),
    ],
    outputs,
  };
}

/**
 * The forward (log-probs, entropy sum, kept activations) and the backward (gradients from the kept
 * activations). Throws when the backward would recompute a matrix product or a softmax outside
 * what the graph names as `recomputed`: a value the training graph forgot to keep.
 */
export function splitTrainingGraph(graph: TrainingGraph): SplitTrainingGraphs {
  const lossOutputs = graph.outputs.filter(
    (v) => v.name === TRAINING_NAMES.tokenLogProbs || v.name === TRAINING_NAMES.entropySum,
  );
  const gradientOutputs = graph.outputs.filter((v) => !lossOutputs.includes(v));
  const saved = graph.saved;
  const forwardNodes = closure(graph, [...lossOutputs.map((v) => v.name), ...saved], new Set());
  const backwardNodes = closure(
    graph,
    gradientOutputs.map((v) => v.name),
    new Set(saved),
  );
  const recomputed = graph.nodes.filter((n) => backwardNodes.has(n) && forwardNodes.has(n));
  // The nodes of the values the graph recomputes by design, back to kept values.
  const byDesign = closure(graph, graph.recomputed, new Set(saved));
  const costly = recomputed.find((n) => !RECOMPUTABLE.has(n.opType) && !byDesign.has(n));
  if (costly)
    throw new Error(
      `the training graph's backward would recompute ${costly.opType} -> ${costly.outputs.join(', ')}: keep its input`,
    );
  return {
    forward: subgraph(
      graph,
      `${graph.name}.forward`,
      forwardNodes,
      [],
      [...lossOutputs, ...saved.map(activation)],
    ),
    backward: subgraph(graph, `${graph.name}.backward`, backwardNodes, saved, gradientOutputs),
    saved,
    recomputed,
  };
}
