// A minimal ONNX ModelProto encoder: the protobuf wire format of the few messages and fields a
// graph of standard ops needs (onnx/onnx.proto, IR version 8). Field numbers are onnx.proto's.

/** onnx.TensorProto.DataType values used here. */
export const ONNX_FLOAT = 1;
export const ONNX_INT64 = 7;

export type OnnxElementType = typeof ONNX_FLOAT | typeof ONNX_INT64;

/** A constant tensor (an initializer); a Float32Array of float values is written as it is, without a copy. */
export interface OnnxTensor {
  name: string;
  type: OnnxElementType;
  dims: readonly number[];
  values: readonly number[] | Float32Array;
}

export type OnnxAttribute = number | readonly number[] | { float: number } | { string: string };

export interface OnnxNode {
  opType: string;
  /** The operator set's domain: the default ONNX one when absent, `com.microsoft` for ONNX Runtime's contrib operators (imported at version 1). */
  domain?: string;
  inputs: readonly string[];
  outputs: readonly string[];
  attributes?: Record<string, OnnxAttribute>;
}

/** A graph input or output; a string dimension is symbolic (free per run); `null` dims: shape unstated. */
export interface OnnxValueInfo {
  name: string;
  type: OnnxElementType;
  dims: ReadonlyArray<number | string> | null;
}

/** A float graph input or output. */
export function floatValueInfo(name: string, dims: ReadonlyArray<number | string>): OnnxValueInfo {
  return { name, type: ONNX_FLOAT, dims };
}

/** An int64 graph input or output. */
export function int64ValueInfo(name: string, dims: ReadonlyArray<number | string>): OnnxValueInfo {
  return { name, type: ONNX_INT64, dims };
}

export interface OnnxGraph {
  name: string;
  nodes: readonly OnnxNode[];
  initializers: readonly OnnxTensor[];
  inputs: readonly OnnxValueInfo[];
  outputs: readonly OnnxValueInfo[];
}

const WIRE_VARINT = 0;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

/**
 * Appends protobuf fields as a list of byte chunks: small fields go to a pending byte list, large
 * byte fields (a weight's raw data) and nested messages are kept as the chunks they are, never
 * copied per nesting level; `finish` joins them once. A model whose weights are initializers (a few
 * MB) encodes in milliseconds: a byte list copied at each level took 0.3 s for 860 K floats.
 */
class ProtoWriter {
  private readonly chunks: Uint8Array[] = [];
  private pending: number[] = [];
  private size = 0;

  private varint(value: bigint): void {
    // int64 fields are two's complement on the wire: a negative value takes ten bytes.
    let v = BigInt.asUintN(64, value);
    while (v >= 0x80n) {
      this.pending.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.pending.push(Number(v));
  }

  private tag(field: number, wire: number): void {
    this.varint(BigInt((field << 3) | wire));
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    this.chunks.push(Uint8Array.from(this.pending));
    this.size += this.pending.length;
    this.pending = [];
  }

  int(field: number, value: number): this {
    this.tag(field, WIRE_VARINT);
    this.varint(BigInt(value));
    return this;
  }

  float(field: number, value: number): this {
    this.tag(field, WIRE_FIXED32);
    const buffer = new DataView(new ArrayBuffer(4));
    buffer.setFloat32(0, value, true);
    for (let i = 0; i < 4; i++) this.pending.push(buffer.getUint8(i));
    return this;
  }

  bytesField(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(BigInt(value.length));
    this.flush();
    this.chunks.push(value);
    this.size += value.length;
    return this;
  }

  string(field: number, value: string): this {
    return this.bytesField(field, new TextEncoder().encode(value));
  }

  message(field: number, write: (w: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    write(inner);
    inner.flush();
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(BigInt(inner.size));
    this.flush();
    // One at a time: a graph's message holds thousands of chunks, too many to spread as arguments.
    for (const chunk of inner.chunks) this.chunks.push(chunk);
    this.size += inner.size;
    return this;
  }

  /** A packed repeated int64 (proto3 packs repeated scalars by default). */
  packedInts(field: number, values: readonly number[]): this {
    const inner = new ProtoWriter();
    for (const v of values) inner.varint(BigInt(v));
    return this.bytesField(field, Uint8Array.from(inner.pending));
  }

  finish(): Uint8Array {
    this.flush();
    const bytes = new Uint8Array(this.size);
    let at = 0;
    for (const chunk of this.chunks) {
      bytes.set(chunk, at);
      at += chunk.length;
    }
    return bytes;
  }
}

// TensorProto: dims = 1, data_type = 2, name = 8, raw_data = 9 (little-endian values).
function writeTensor(w: ProtoWriter, tensor: OnnxTensor): void {
  w.packedInts(1, tensor.dims).int(2, tensor.type).string(8, tensor.name);
  const { values } = tensor;
  let raw: Uint8Array;
  if (tensor.type === ONNX_FLOAT)
    raw =
      values instanceof Float32Array
        ? new Uint8Array(values.buffer, values.byteOffset, values.byteLength)
        : new Uint8Array(Float32Array.from(values).buffer);
  else raw = new Uint8Array(BigInt64Array.from(Array.from(values, (v) => BigInt(v))).buffer);
  w.bytesField(9, raw);
}

// AttributeProto: name = 1, f = 2, i = 3, s = 4, t = 5, ints = 8, type = 20 (FLOAT 1, INT 2, STRING 3, INTS 7).
function writeAttribute(w: ProtoWriter, name: string, value: OnnxAttribute): void {
  w.string(1, name);
  if (typeof value === 'number') w.int(3, value).int(20, 2);
  else if (Array.isArray(value)) w.packedInts(8, value).int(20, 7);
  else if ('string' in (value as object)) w.string(4, (value as { string: string }).string).int(20, 3);
  else w.float(2, (value as { float: number }).float).int(20, 1);
}

// NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5, domain = 7.
function writeNode(w: ProtoWriter, node: OnnxNode, index: number): void {
  for (const input of node.inputs) w.string(1, input);
  for (const output of node.outputs) w.string(2, output);
  w.string(3, `${node.opType}_${index}`).string(4, node.opType);
  if (node.domain) w.string(7, node.domain);
  for (const [name, value] of Object.entries(node.attributes ?? {}))
    w.message(5, (a) => writeAttribute(a, name, value));
}

// ValueInfoProto: name = 1, type = 2; TypeProto.tensor_type = 1 {elem_type = 1, shape = 2 {dim = 1 {dim_value = 1, dim_param = 2}}}.
function writeValueInfo(w: ProtoWriter, info: OnnxValueInfo): void {
  w.string(1, info.name).message(2, (type) =>
    type.message(1, (tensor) => {
      tensor.int(1, info.type);
      const dims = info.dims;
      if (dims) {
        tensor.message(2, (shape) => {
          for (const dim of dims)
            shape.message(1, (d) => (typeof dim === 'number' ? d.int(1, dim) : d.string(2, dim)));
        });
      }
    }),
  );
}

/**
 * `graph` with the named inputs made initializers holding `constants` (float inputs, each the
 * input's element count; the arrays are referenced, not copied, until the graph is encoded): ONNX
 * Runtime then treats them as constants, e.g. packs a MatMul's weight once per session instead of
 * once per run. Throws on a name the graph has no float input of, or a length that does not fit.
 */
export function withConstantInputs(
  graph: OnnxGraph,
  constants: Readonly<Record<string, Float32Array>>,
): OnnxGraph {
  const inputs = new Map(graph.inputs.map((input) => [input.name, input]));
  const initializers: OnnxTensor[] = Object.entries(constants).map(([name, values]) => {
    const input = inputs.get(name);
    if (!input || input.type !== ONNX_FLOAT || !input.dims || input.dims.some((d) => typeof d !== 'number'))
      throw new Error(
        `withConstantInputs: '${name}' is not a float input of fixed shape in graph '${graph.name}'`,
      );
    const dims = input.dims as number[];
    const count = dims.reduce((n, d) => n * d, 1);
    if (values.length !== count)
      throw new Error(
        `withConstantInputs: '${name}' holds ${values.length} values; its shape [${dims.join(', ')}] takes ${count}`,
      );
    return { name, type: ONNX_FLOAT, dims, values };
  });
  return {
    ...graph,
    inputs: graph.inputs.filter((input) => !(input.name in constants)),
    initializers: [...graph.initializers, ...initializers],
  };
}

/**
 * ModelProto bytes (ir_version = 1, producer_name = 2, graph = 7, opset_import = 8) of one graph:
 * the default domain at `opset`, any other domain a node names at version 1. GraphProto: node = 1, name = 2, initializer = 5, input = 11, output = 12.
 */
export function encodeOnnxModel(graph: OnnxGraph, opset: number, producer = 'searcher-rl'): Uint8Array {
  const model = new ProtoWriter();
  model.int(1, 8).string(2, producer);
  model.message(7, (g) => {
    graph.nodes.forEach((node, index) => g.message(1, (n) => writeNode(n, node, index)));
    g.string(2, graph.name);
    for (const tensor of graph.initializers) g.message(5, (t) => writeTensor(t, tensor));
    for (const input of graph.inputs) g.message(11, (v) => writeValueInfo(v, input));
    for (const output of graph.outputs) g.message(12, (v) => writeValueInfo(v, output));
  });
  model.message(8, (o) => o.string(1, '').int(2, opset));
  for (const domain of new Set(graph.nodes.flatMap((node) => (node.domain ? [node.domain] : []))))
    model.message(8, (o) => o.string(1, domain).int(2, 1));
  return model.finish();
}
