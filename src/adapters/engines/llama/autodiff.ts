import {
  floatValueInfo,
  GraphBuilder,
  int64ValueInfo,
  ONNX_FLOAT,
  ONNX_INT64,
  type OnnxAttribute,
  type OnnxGraph,
  type OnnxNode,
  type OnnxTensor,
  type OnnxValueInfo,
} from '../onnx-graph/index';

// Reverse-mode differentiation of ONNX graphs, for the Llama engine's training graph: the forward
// is written once with the differentiable ops below (each records its vector-Jacobian product on a
// tape), and `gradients` appends the backward as more ONNX nodes. The same forward builder then
// gives the rollout graph (no gradients recorded when nothing needs them), the scoring graph and
// the training graph, for full fine-tuning and LoRA alike, with Llama's variants (Qwen2's biases,
// Qwen3's q/k norms) differentiated without a hand-derived backward for each. Shapes are tracked
// symbolically (a string dimension is free per run) so that a broadcast operand's gradient is
// summed over exactly the axes it was broadcast along.

export type Dim = number | string;

/** A named value of the graph: its symbolic shape, and whether a gradient flows through it. */
export interface Value {
  readonly name: string;
  readonly shape: readonly Dim[];
  readonly needsGradient: boolean;
}

interface TapeEntry {
  output: Value;
  inputs: readonly Value[];
  /** The gradient of each input (null: none) given the output's, as new nodes. */
  backward(outputGradient: string): ReadonlyArray<string | null>;
}

/** The numpy broadcast of two symbolic shapes; a literal 1 stretches to the other's dimension. */
export function broadcastShapes(a: readonly Dim[], b: readonly Dim[]): Dim[] {
  const rank = Math.max(a.length, b.length);
  const out: Dim[] = [];
  for (let i = 0; i < rank; i++) {
    const x = a[a.length - rank + i] ?? 1;
    const y = b[b.length - rank + i] ?? 1;
    if (x === 1) out.push(y);
    else if (y === 1 || x === y) out.push(x);
    else throw new Error(`autodiff: cannot broadcast [${a.join(', ')}] with [${b.join(', ')}]`);
  }
  return out;
}

export class DifferentiableGraph {
  // Nodes and constants are collected as the transformer's forward collects them (GraphBuilder).
  private readonly builder = new GraphBuilder();
  readonly nodes: OnnxNode[] = this.builder.nodes;
  readonly initializers: OnnxTensor[] = this.builder.initializers;
  readonly inputs: OnnxValueInfo[] = [];
  private readonly tape: TapeEntry[] = [];
  private readonly constants = new Map<string, string>();
  private counter = 0;

  /**
   * `transposedLinear`: a linear layer as MatMul(x, Transpose(w)) instead of Gemm with transB. In
   * graphs whose weights are inputs (score, train), ONNX Runtime's Gemm with a transposed input
   * took 31 ms where the same product as a MatMul took 12.6 ms (SmolLM2's gate and up
   * projections, 1024 rows, 2 threads).
   */
  constructor(private readonly options: { transposedLinear?: boolean } = {}) {}

  /** A node with one output (a fresh name unless given): GraphBuilder's `op`. */
  node(...args: Parameters<GraphBuilder['op']>): string {
    return this.builder.op(...args);
  }

  /** A graph input; float unless `int64`. */
  input(
    name: string,
    shape: readonly Dim[],
    options: { int64?: boolean; needsGradient?: boolean } = {},
  ): Value {
    this.inputs.push((options.int64 ? int64ValueInfo : floatValueInfo)(name, shape));
    return { name, shape, needsGradient: options.needsGradient ?? false };
  }

  /** A constant value wrapped as a Value (no gradient). */
  constant(values: readonly number[] | Float32Array, dims: readonly number[], int64 = false): Value {
    const key = `${int64 ? 'i' : 'f'}:${dims.join('x')}:${Array.from(values).join(',')}`;
    let name = values.length <= 16 ? this.constants.get(key) : undefined;
    if (!name) {
      name = `const_${this.counter++}`;
      this.initializers.push({ name, type: int64 ? ONNX_INT64 : ONNX_FLOAT, dims, values });
      if (values.length <= 16) this.constants.set(key, name);
    }
    return { name, shape: dims, needsGradient: false };
  }

  ints(values: readonly number[]): string {
    return this.constant(values, [values.length], true).name;
  }

  scalar(value: number): string {
    return this.constant([value], []).name;
  }

  private record(
    opType: string,
    inputs: readonly Value[],
    shape: readonly Dim[],
    backward: TapeEntry['backward'],
    attributes?: Record<string, OnnxAttribute>,
    extraInputs: readonly string[] = [],
    domain?: string,
  ): Value {
    const name = this.node(
      opType,
      [...inputs.map((v) => v.name), ...extraInputs],
      attributes,
      undefined,
      domain,
    );
    const output = { name, shape, needsGradient: inputs.some((v) => v.needsGradient) };
    if (output.needsGradient) this.tape.push({ output, inputs, backward });
    return output;
  }

  /** Sums `gradient` (shaped `from`) down to `to`'s shape, over the axes `to` was broadcast along. */
  private reduceTo(gradient: string, from: readonly Dim[], to: readonly Dim[]): string {
    let out = gradient;
    const extra = from.length - to.length;
    if (extra > 0)
      out = this.node('ReduceSum', [out, this.ints(Array.from({ length: extra }, (_, i) => i))], {
        keepdims: 0,
      });
    const axes = to.flatMap((d, i) => (d === 1 && from[i + extra] !== 1 ? [i] : []));
    if (axes.length > 0) out = this.node('ReduceSum', [out, this.ints(axes)], { keepdims: 1 });
    return out;
  }

  private elementwise(
    opType: 'Add' | 'Sub' | 'Mul',
    a: Value,
    b: Value,
    gradients: (g: string) => [string | null, string | null],
  ): Value {
    const shape = broadcastShapes(a.shape, b.shape);
    return this.record(opType, [a, b], shape, (g) => {
      const [ga, gb] = gradients(g);
      return [
        ga && a.needsGradient ? this.reduceTo(ga, shape, a.shape) : null,
        gb && b.needsGradient ? this.reduceTo(gb, shape, b.shape) : null,
      ];
    });
  }

  add(a: Value, b: Value): Value {
    return this.elementwise('Add', a, b, (g) => [g, g]);
  }

  sub(a: Value, b: Value): Value {
    return this.elementwise('Sub', a, b, (g) => [g, this.node('Neg', [g])]);
  }

  mul(a: Value, b: Value): Value {
    return this.elementwise('Mul', a, b, (g) => [
      a.needsGradient ? this.node('Mul', [g, b.name]) : null,
      b.needsGradient ? this.node('Mul', [g, a.name]) : null,
    ]);
  }

  /** x * c for a constant c. */
  scale(x: Value, c: number): Value {
    const k = this.scalar(c);
    return this.record('Mul', [x], x.shape, (g) => [this.node('Mul', [g, k])], undefined, [k]);
  }

  sigmoid(x: Value): Value {
    const y: Value = this.record('Sigmoid', [x], x.shape, (g) => {
      const oneMinus = this.node('Sub', [this.scalar(1), y.name]);
      return [this.node('Mul', [g, this.node('Mul', [y.name, oneMinus])])];
    });
    return y;
  }

  /** 1 / sqrt(x); d/dx = -y^3 / 2. */
  rsqrt(x: Value): Value {
    const root = this.node('Sqrt', [x.name]);
    const y: Value = {
      name: this.node('Reciprocal', [root]),
      shape: x.shape,
      needsGradient: x.needsGradient,
    };
    if (y.needsGradient)
      this.tape.push({
        output: y,
        inputs: [x],
        backward: (g) => {
          const cube = this.node('Mul', [y.name, this.node('Mul', [y.name, y.name])]);
          return [this.node('Mul', [g, this.node('Mul', [cube, this.scalar(-0.5)])])];
        },
      });
    return y;
  }

  /** The mean over the last axis, kept as size 1. */
  meanLast(x: Value): Value {
    const n = x.shape[x.shape.length - 1];
    if (typeof n !== 'number') throw new Error('autodiff: meanLast needs a fixed last dimension');
    return this.record(
      'ReduceMean',
      [x],
      [...x.shape.slice(0, -1), 1],
      (g) => [this.node('Expand', [this.node('Mul', [g, this.scalar(1 / n)]), this.node('Shape', [x.name])])],
      { axes: [-1], keepdims: 1 },
    );
  }

  /** x [rows, in] times w [out, in] transposed: a linear layer with the weight as Hugging Face stores it. */
  linear(x: Value, w: Value): Value {
    if (x.shape.length !== 2 || w.shape.length !== 2) throw new Error('autodiff: linear takes 2-D operands');
    const backward = (g: string) => [
      x.needsGradient ? this.node('MatMul', [g, w.name]) : null,
      w.needsGradient ? this.node('Gemm', [g, x.name], { transA: 1 }) : null,
    ];
    if (this.options.transposedLinear) {
      const product = this.node('MatMul', [x.name, this.node('Transpose', [w.name], { perm: [1, 0] })]);
      const output = {
        name: product,
        shape: [x.shape[0]!, w.shape[0]!],
        needsGradient: x.needsGradient || w.needsGradient,
      };
      if (output.needsGradient) this.tape.push({ output, inputs: [x, w], backward });
      return output;
    }
    return this.record('Gemm', [x, w], [x.shape[0]!, w.shape[0]!], backward, { transB: 1 });
  }

  /** Batched a [..., m, k] times b [..., k, n] with the same batch dimensions. */
  matmul(a: Value, b: Value): Value {
    const rank = a.shape.length;
    if (b.shape.length !== rank) throw new Error('autodiff: matmul operands differ in rank');
    const swap = Array.from({ length: rank }, (_, i) =>
      i < rank - 2 ? i : i === rank - 2 ? rank - 1 : rank - 2,
    );
    const shape = [...a.shape.slice(0, -1), b.shape[rank - 1]!];
    return this.record('MatMul', [a, b], shape, (g) => [
      a.needsGradient ? this.node('MatMul', [g, this.node('Transpose', [b.name], { perm: swap })]) : null,
      b.needsGradient ? this.node('MatMul', [this.node('Transpose', [a.name], { perm: swap }), g]) : null,
    ]);
  }

  /** Reshape to `shape` (a runtime int64 tensor's name), whose symbolic form is `symbolic`. */
  reshape(x: Value, shape: string, symbolic: readonly Dim[]): Value {
    return this.record(
      'Reshape',
      [x],
      symbolic,
      (g) => [this.node('Reshape', [g, this.node('Shape', [x.name])])],
      undefined,
      [shape],
    );
  }

  transpose(x: Value, perm: readonly number[]): Value {
    const inverse = perm.map((_, i) => perm.indexOf(i));
    return this.record(
      'Transpose',
      [x],
      perm.map((p) => x.shape[p]!),
      (g) => [this.node('Transpose', [g], { perm: inverse })],
      { perm },
    );
  }

  softmaxLast(x: Value): Value {
    const y: Value = this.record(
      'Softmax',
      [x],
      x.shape,
      (g) => {
        const dot = this.node('ReduceSum', [this.node('Mul', [g, y.name]), this.ints([-1])], { keepdims: 1 });
        return [this.node('Mul', [y.name, this.node('Sub', [g, dot])])];
      },
      { axis: -1 },
    );
    return y;
  }

  /**
   * Rows of x [n, d] at `indices` (int64 [p], distinct): the gradient scatters back into zeros. For
   * the token embedding use `embedding`, whose ids repeat.
   */
  gatherRows(x: Value, indices: string, count: Dim): Value {
    return this.record(
      'Gather',
      [x],
      [count, x.shape[1]!],
      (g) => {
        const zeros = this.node('ConstantOfShape', [this.node('Shape', [x.name])], {});
        const at = this.node('Unsqueeze', [indices, this.ints([-1])]);
        return [this.node('ScatterND', [zeros, at, g])];
      },
      { axis: 0 },
      [indices],
    );
  }

  /**
   * Rows of `table` [vocabulary, d] at `ids` (int64 [n]); its gradient is not a graph value: the
   * rows' gradient [n, d] becomes the output `rowsGradientName`, which the caller adds into the
   * table's gradient at the ids (ScatterND's reduction 'add' loses additions of repeated ids across
   * ONNX Runtime's threads; see training-graph.ts).
   */
  embedding(table: Value, ids: string, count: Dim, rowsGradientName: string): Value {
    return this.record(
      'Gather',
      [table],
      [count, table.shape[1]!],
      (g) => {
        this.node('Identity', [g], undefined, rowsGradientName);
        return [null];
      },
      { axis: 0 },
      [ids],
    );
  }

  /**
   * A root whose gradient is given rather than derived: `seed` builds the gradient of the
   * objective by `x` (used for the log-softmax head, whose closed form is one expression).
   */
  seed(x: Value, gradient: string): void {
    this.rootGradients.set(x.name, [...(this.rootGradients.get(x.name) ?? []), gradient]);
  }

  private readonly rootGradients = new Map<string, string[]>();

  /**
   * Appends the backward from the seeded roots and names each wanted value's gradient
   * `outputName(value)`; a value nothing reached gets zeros of its shape.
   */
  gradients(wanted: readonly Value[], outputName: (value: Value) => string): void {
    const contributions = new Map<string, string[]>(
      [...this.rootGradients].map(([name, gradients]) => [name, [...gradients]]),
    );
    const total = (name: string): string | null => {
      const parts = contributions.get(name);
      if (!parts || parts.length === 0) return null;
      return parts.length === 1 ? parts[0]! : this.node('Sum', parts);
    };
    for (let i = this.tape.length - 1; i >= 0; i--) {
      const entry = this.tape[i]!;
      const g = total(entry.output.name);
      if (!g) continue;
      const inputGradients = entry.backward(g);
      entry.inputs.forEach((input, k) => {
        const ig = inputGradients[k];
        if (!ig || !input.needsGradient) return;
        contributions.set(input.name, [...(contributions.get(input.name) ?? []), ig]);
      });
    }
    for (const value of wanted) {
      const g = total(value.name);
      const name = outputName(value);
      if (g) this.node('Identity', [g], undefined, name);
      else this.node('ConstantOfShape', [this.node('Shape', [value.name])], {}, name);
    }
  }

  /** The graph with the given outputs (names and shapes). */
  toGraph(name: string, outputs: readonly OnnxValueInfo[]): OnnxGraph {
    return { name, nodes: this.nodes, initializers: this.initializers, inputs: this.inputs, outputs };
  }
}
