// A minimal ONNX ModelProto encoder: the protobuf wire format of the few messages and fields a
// graph of standard ops needs (onnx/onnx.proto, IR version 8). Field numbers are onnx.proto's.

/** onnx.TensorProto.DataType values used here. */
export const ONNX_FLOAT = 1;
export const ONNX_INT64 = 7;

export type OnnxElementType = typeof ONNX_FLOAT | typeof ONNX_INT64;

/** A constant tensor (an initializer). */
export interface OnnxTensor {
  name: string;
  type: OnnxElementType;
  dims: readonly number[];
  values: readonly number[];
}

export type OnnxAttribute = number | readonly number[] | { float: number } | { string: string };

export interface OnnxNode {
  opType: string;
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

/** Appends protobuf fields to a growing byte list; nested messages are encoded first and length-prefixed. */
class ProtoWriter {
  private readonly bytes: number[] = [];

  private varint(value: bigint): void {
    // int64 fields are two's complement on the wire: a negative value takes ten bytes.
    let v = BigInt.asUintN(64, value);
    while (v >= 0x80n) {
      this.bytes.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.bytes.push(Number(v));
  }

  private tag(field: number, wire: number): void {
    this.varint(BigInt((field << 3) | wire));
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
    for (let i = 0; i < 4; i++) this.bytes.push(buffer.getUint8(i));
    return this;
  }

  bytesField(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(BigInt(value.length));
    for (const b of value) this.bytes.push(b);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytesField(field, new TextEncoder().encode(value));
  }

  message(field: number, write: (w: ProtoWriter) => void): this {
    const inner = new ProtoWriter();
    write(inner);
    return this.bytesField(field, inner.finish());
  }

  /** A packed repeated int64 (proto3 packs repeated scalars by default). */
  packedInts(field: number, values: readonly number[]): this {
    const inner = new ProtoWriter();
    for (const v of values) inner.varint(BigInt(v));
    return this.bytesField(field, inner.finish());
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }
}

// TensorProto: dims = 1, data_type = 2, name = 8, raw_data = 9 (little-endian values).
function writeTensor(w: ProtoWriter, tensor: OnnxTensor): void {
  w.packedInts(1, tensor.dims).int(2, tensor.type).string(8, tensor.name);
  const raw =
    tensor.type === ONNX_FLOAT
      ? new Uint8Array(Float32Array.from(tensor.values).buffer)
      : new Uint8Array(BigInt64Array.from(tensor.values.map((v) => BigInt(v))).buffer);
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

// NodeProto: input = 1, output = 2, name = 3, op_type = 4, attribute = 5.
function writeNode(w: ProtoWriter, node: OnnxNode, index: number): void {
  for (const input of node.inputs) w.string(1, input);
  for (const output of node.outputs) w.string(2, output);
  w.string(3, `${node.opType}_${index}`).string(4, node.opType);
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
 * ModelProto bytes (ir_version = 1, producer_name = 2, graph = 7, opset_import = 8) of one graph
 * in the default domain at `opset`. GraphProto: node = 1, name = 2, initializer = 5, input = 11, output = 12.
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
  return model.finish();
}
