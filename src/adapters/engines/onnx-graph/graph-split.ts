import { ONNX_FLOAT, ONNX_INT64, type OnnxGraph, type OnnxNode, type OnnxValueInfo } from './proto';

// A training graph cut at its kept activations (the tfjs policy's transformer and the Llama graph
// both). The loss needs the log-probs before it can give the backward its g, so the forward and the
// backward are two ONNX Runtime runs; uncut, the second run recomputed the whole forward (a third of
// the step). Feeding the kept activations back costs nothing (onnxruntime-node reads a Float32Array
// input in place); fetching them is a copy into a new ArrayBuffer (about 0.3 ms a MB with the
// allocation and the garbage collection after), so a value that is cheap to compute again from kept
// ones (the attention weights) is not fetched.

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
  outputs: OnnxGraph['outputs'],
): OnnxGraph {
  const kept = graph.nodes.filter((n) => nodes.has(n));
  const read = new Set(kept.flatMap((n) => n.inputs));
  return {
    name,
    nodes: kept,
    initializers: graph.initializers.filter((t) => read.has(t.name)),
    inputs: graph.inputs.filter((v) => read.has(v.name)),
    outputs,
  };
}

/** The result of `cutGraph`: the forward part, the backward part and what passes between them. */
export interface CutGraphs {
  /** The graph's inputs except the backward's own -> `forwardOutputs`, then the kept values (`saved`). */
  forward: OnnxGraph;
  /** The inputs it reads (the backward's own among them) and the kept values -> the other outputs. */
  backward: OnnxGraph;
  /** The values the forward hands to the backward, in the forward's output order. */
  saved: readonly string[];
  /** Forward nodes the backward runs again from kept values. */
  recomputed: readonly OnnxNode[];
}

export interface CutOptions {
  /** The outputs the forward gives (the loss's inputs); every other output is the backward's. */
  forwardOutputs: readonly string[];
  /**
   * Op types the backward computes again rather than fetch (cheap next to a copy out of ONNX
   * Runtime and back). `Shape` needs none: a value the backward reads only the shape of hands over its
   * shape alone.
   */
  recomputable: ReadonlySet<string>;
  /**
   * Graph inputs that are the same in both runs and cost nothing to feed twice (weights): a value
   * computed from them alone (a transposed weight) is computed again rather than fetched.
   */
  staticInputs: ReadonlySet<string>;
  /** Values kept when the backward reads them, even when their op is recomputable (the graph's own choice). */
  keep?: ReadonlySet<string>;
  /**
   * Values the backward computes again, with what they are computed from back to kept values and
   * inputs, whatever their ops (the graph's own choice: attention weights, a product and a softmax
   * of kept queries and keys, cost less to compute than to fetch).
   */
  recompute?: readonly string[];
}

/**
 * Cuts a forward + backward graph (one whose gradients need inputs that only the loss can give:
 * those no forward output reads) into two graphs, choosing what the forward keeps: a value the
 * backward reads is fetched when it is the output of an op not `recomputable` (a matrix product, a
 * softmax, a reduction), otherwise its op runs again in the backward, back to kept values and inputs.
 * The forward runs no node twice; the two runs together compute what the one graph does.
 */
export function cutGraph(graph: OnnxGraph, options: CutOptions): CutGraphs {
  const producer = new Map<string, OnnxNode>();
  for (const node of graph.nodes) for (const output of node.outputs) producer.set(output, node);
  const forwardNodes = closure(graph, options.forwardOutputs, new Set());
  const forwardValues = new Set([...forwardNodes].flatMap((n) => n.outputs));
  const missing = options.forwardOutputs.filter((name) => !producer.has(name));
  if (missing.length > 0) throw new Error(`cutGraph: no node gives ${missing.join(', ')}`);
  // Values that depend on no input but the static ones (and initializers).
  const isStatic = new Map<string, boolean>();
  const inputNames = new Set(graph.inputs.map((v) => v.name));
  const staticValue = (name: string): boolean => {
    const known = isStatic.get(name);
    if (known !== undefined) return known;
    const node = producer.get(name);
    const result = node
      ? node.inputs.every((input) => input === '' || staticValue(input))
      : !inputNames.has(name) || options.staticInputs.has(name);
    isStatic.set(name, result);
    return result;
  };
  const int64Value = (name: string): boolean => {
    const node = producer.get(name);
    if (!node) {
      const declared =
        graph.inputs.find((v) => v.name === name)?.type ??
        graph.initializers.find((t) => t.name === name)?.type;
      return declared === ONNX_INT64;
    }
    if (node.opType === 'Shape') return true;
    return ['Unsqueeze', 'Squeeze', 'Reshape', 'Concat', 'Slice', 'Identity', 'Expand', 'Gather'].includes(
      node.opType,
    )
      ? int64Value(node.inputs[0]!)
      : false;
  };

  const recomputedByChoice = closure(graph, options.recompute ?? [], options.keep ?? new Set());
  const saved: string[] = [];
  const savedSet = new Set<string>();
  const shapeNodes = new Set<OnnxNode>();
  const backwardNodes = new Set<OnnxNode>();
  const keep = (name: string) => {
    if (!savedSet.has(name)) {
      savedSet.add(name);
      saved.push(name);
    }
  };
  const visit = (name: string) => {
    if (name === '' || savedSet.has(name)) return;
    const node = producer.get(name);
    if (!node || backwardNodes.has(node)) return;
    // The shape of a forward value: the forward hands over the shape, not the value.
    if (node.opType === 'Shape' && forwardValues.has(node.inputs[0]!) && !staticValue(node.inputs[0]!)) {
      shapeNodes.add(node);
      keep(name);
      return;
    }
    if (
      forwardValues.has(name) &&
      !staticValue(name) &&
      (options.keep?.has(name) || (!options.recomputable.has(node.opType) && !recomputedByChoice.has(node)))
    ) {
      keep(name);
      return;
    }
    backwardNodes.add(node);
    node.inputs.forEach(visit);
  };
  const forwardOutputSet = new Set(options.forwardOutputs);
  const backwardOutputs = graph.outputs.filter((v) => !forwardOutputSet.has(v.name));
  for (const output of backwardOutputs) visit(output.name);

  const forwardAll = new Set([
    ...forwardNodes,
    ...closure(
      graph,
      [...shapeNodes].flatMap((n) => n.inputs),
      new Set(),
    ),
    ...shapeNodes,
  ]);
  const savedInfo = (name: string): OnnxValueInfo => ({
    name,
    type: int64Value(name) ? ONNX_INT64 : ONNX_FLOAT,
    dims: null,
  });
  const backward = subgraph(graph, `${graph.name}.backward`, backwardNodes, backwardOutputs);
  return {
    forward: subgraph(graph, `${graph.name}.forward`, forwardAll, [
      ...graph.outputs.filter((v) => forwardOutputSet.has(v.name)),
      ...saved.map(savedInfo),
    ]),
    backward: {
      ...backward,
      inputs: [...backward.inputs, ...saved.map(savedInfo)],
    },
    saved,
    recomputed: graph.nodes.filter((n) => backwardNodes.has(n) && forwardAll.has(n)),
  };
}
