import { closeSync, openSync, readSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';
import { InvalidArgumentError } from '../../core/errors';
import { firstNonFinite, float32Values } from '../../core/finite-values';

// The weights of an exported model (its initializers, in model.onnx or in external data files)
// are checked before a session is made: ONNX Runtime loads NaN and Infinity without complaint,
// and a policy decoding from them samples garbage. A protobuf walk over the few fields that hold
// initializers (field numbers are onnx/onnx.proto's); Constant nodes are not weights (a -inf
// attention mask is legitimate there) and are not checked.

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

const FLOAT = 1;
const FLOAT16 = 10;
const DOUBLE = 11;
const BFLOAT16 = 16;
const ELEMENT_BYTES: Record<number, number> = { [FLOAT]: 4, [FLOAT16]: 2, [DOUBLE]: 8, [BFLOAT16]: 2 };

class ProtoError extends Error {}

/** The fields of one protobuf message: field number -> values (numbers for varints, bytes otherwise). */
function fields(bytes: Uint8Array): Array<{ field: number; wire: number; value: number | Uint8Array }> {
  const out: Array<{ field: number; wire: number; value: number | Uint8Array }> = [];
  let i = 0;
  const varint = () => {
    let result = 0;
    let scale = 1;
    for (let k = 0; k < 10; k++) {
      if (i >= bytes.length) throw new ProtoError('a varint runs past the end');
      const b = bytes[i++]!;
      result += (b & 0x7f) * scale;
      scale *= 128;
      if (b < 0x80) return result;
    }
    throw new ProtoError('a varint longer than 10 bytes');
  };
  const take = (n: number) => {
    if (n < 0 || i + n > bytes.length) throw new ProtoError('a field runs past the end');
    const value = bytes.subarray(i, i + n);
    i += n;
    return value;
  };
  while (i < bytes.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === WIRE_VARINT) out.push({ field, wire, value: varint() });
    else if (wire === WIRE_FIXED64) out.push({ field, wire, value: take(8) });
    else if (wire === WIRE_LENGTH_DELIMITED) out.push({ field, wire, value: take(varint()) });
    else if (wire === WIRE_FIXED32) out.push({ field, wire, value: take(4) });
    else throw new ProtoError(`wire type ${wire} (groups are not used by ONNX)`);
  }
  return out;
}

const bytesOf = (value: number | Uint8Array) => (typeof value === 'number' ? new Uint8Array() : value);

/** A stored initializer: its name, element type, element count and where its values are. */
interface StoredTensor {
  name: string;
  dataType: number;
  count: number;
  raw: Uint8Array | null;
  /** float_data / double_data (packed or not) and int32_data (float16 and bfloat16 bits), as read. */
  listed: number[];
  external: { location: string; offset: number; length: number | null } | null;
}

const textDecoder = new TextDecoder();

// TensorProto: dims 1, data_type 2, float_data 4, int32_data 5, name 8, raw_data 9, double_data 10,
// external_data 13 (key 1, value 2), data_location 14 (1: external).
function readTensor(bytes: Uint8Array): StoredTensor {
  const tensor: StoredTensor = { name: '', dataType: 0, count: 1, raw: null, listed: [], external: null };
  const external: Record<string, string> = {};
  let dataLocation = 0;
  for (const { field, wire, value } of fields(bytes)) {
    if (field === 1) {
      if (wire === WIRE_VARINT) tensor.count *= value as number;
      else for (const d of packedVarints(bytesOf(value))) tensor.count *= d;
    } else if (field === 2) tensor.dataType = value as number;
    else if (field === 8) tensor.name = textDecoder.decode(bytesOf(value));
    else if (field === 9) tensor.raw = bytesOf(value);
    else if (field === 4) tensor.listed.push(...fixedValues(bytesOf(value), 4));
    else if (field === 10) tensor.listed.push(...fixedValues(bytesOf(value), 8));
    else if (field === 5) {
      if (wire === WIRE_VARINT) tensor.listed.push(value as number);
      else tensor.listed.push(...packedVarints(bytesOf(value)));
    } else if (field === 13) {
      let key = '';
      let entry = '';
      for (const f of fields(bytesOf(value))) {
        if (f.field === 1) key = textDecoder.decode(bytesOf(f.value));
        if (f.field === 2) entry = textDecoder.decode(bytesOf(f.value));
      }
      external[key] = entry;
    } else if (field === 14) dataLocation = value as number;
  }
  if (dataLocation === 1)
    tensor.external = {
      location: external.location ?? '',
      offset: Number(external.offset ?? 0),
      length: external.length === undefined ? null : Number(external.length),
    };
  return tensor;
}

/** The values of a packed repeated varint field. */
function packedVarints(bytes: Uint8Array): number[] {
  const values: number[] = [];
  let value = 0;
  let scale = 1;
  for (const b of bytes) {
    value += (b & 0x7f) * scale;
    scale *= 128;
    if (b < 0x80) {
      values.push(value);
      value = 0;
      scale = 1;
    }
  }
  return values;
}

/** Little-endian float32 (width 4) or float64 (width 8) values. */
function fixedValues(bytes: Uint8Array, width: 4 | 8): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const values: number[] = [];
  for (let o = 0; o + width <= bytes.byteLength; o += width)
    values.push(width === 4 ? view.getFloat32(o, true) : view.getFloat64(o, true));
  return values;
}

/** Every initializer of a graph and of its subgraphs (If/Loop/Scan bodies). */
function* graphInitializers(graph: Uint8Array): Generator<StoredTensor> {
  // GraphProto: node 1, initializer 5, sparse_initializer 15 (SparseTensorProto: values 1).
  for (const { field, value } of fields(graph)) {
    if (field === 5) yield readTensor(bytesOf(value));
    else if (field === 15) {
      for (const f of fields(bytesOf(value))) if (f.field === 1) yield readTensor(bytesOf(f.value));
    } else if (field === 1) {
      // NodeProto: attribute 5; AttributeProto: g 6, graphs 11.
      for (const attribute of fields(bytesOf(value))) {
        if (attribute.field !== 5) continue;
        for (const a of fields(bytesOf(attribute.value)))
          if (a.field === 6 || a.field === 11) yield* graphInitializers(bytesOf(a.value));
      }
    }
  }
}

/** The first non-finite element of stored values of an element type, or null. */
function firstNonFiniteElement(
  dataType: number,
  bytes: Uint8Array | null,
  listed: readonly number[],
): { index: number; value: string } | null {
  const half = dataType === FLOAT16 || dataType === BFLOAT16;
  // float16: exponent bits 0x7c00 all set; bfloat16: 0x7f80. A zero mantissa is an infinity.
  const exponent = dataType === FLOAT16 ? 0x7c00 : 0x7f80;
  const describeHalf = (bits: number) =>
    (bits & (exponent ^ 0x7fff)) === 0 ? (bits & 0x8000 ? '-Infinity' : 'Infinity') : 'NaN';
  if (bytes && dataType === FLOAT) {
    // Over a view where the bytes are aligned (initializers usually are), else over a copy.
    const count = Math.floor(bytes.byteLength / 4);
    const values =
      bytes.byteOffset % 4 === 0
        ? new Float32Array(bytes.buffer, bytes.byteOffset, count)
        : float32Values(bytes);
    const bad = firstNonFinite(values);
    return bad && { index: bad.index, value: String(bad.value) };
  }
  if (bytes) {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const width = ELEMENT_BYTES[dataType]!;
    for (let o = 0, index = 0; o + width <= bytes.byteLength; o += width, index++) {
      if (half) {
        const bits = view.getUint16(o, true);
        if ((bits & exponent) === exponent) return { index, value: describeHalf(bits) };
      } else {
        const value = width === 4 ? view.getFloat32(o, true) : view.getFloat64(o, true);
        if (!Number.isFinite(value)) return { index, value: String(value) };
      }
    }
    return null;
  }
  for (let index = 0; index < listed.length; index++) {
    const v = listed[index]!;
    if (half ? (v & exponent) === exponent : !Number.isFinite(v))
      return { index, value: half ? describeHalf(v) : String(v) };
  }
  return null;
}

/**
 * Throws an InvalidArgumentError on `modelDir` naming the file and the initializer when a float
 * initializer of the model (float32, float16, bfloat16 or float64; in model.onnx or in its
 * external data files) holds NaN or ±Infinity, or when the file cannot be read as a model.
 */
export function checkOnnxWeights(modelPath: string, model: Uint8Array): void {
  const refuse = (message: string, cause?: unknown) =>
    new InvalidArgumentError({ argument: 'modelDir', message: `'${modelPath}' ${message}`, cause });
  const handles = new Map<string, number>();
  try {
    // ModelProto: graph 7.
    for (const { field, value } of fields(model)) {
      if (field !== 7) continue;
      for (const tensor of graphInitializers(bytesOf(value))) {
        const width = ELEMENT_BYTES[tensor.dataType];
        if (width === undefined) continue;
        let bytes = tensor.raw;
        let file = modelPath;
        if (tensor.external) {
          file = externalFile(modelPath, tensor.external.location, refuse);
          bytes = readRange(
            handles,
            file,
            tensor.external.offset,
            tensor.external.length ?? tensor.count * width,
          );
        }
        const bad = firstNonFiniteElement(tensor.dataType, bytes, tensor.listed);
        if (bad)
          throw refuse(
            `holds ${bad.value} in initializer '${tensor.name}' (element ${bad.index}${file === modelPath ? '' : `, in ${file}`}): a model's weights must be finite; export it again from a checkpoint that is`,
          );
      }
    }
  } catch (error) {
    if (error instanceof ProtoError) throw refuse(`is not an ONNX model (${error.message})`, error);
    throw error;
  } finally {
    for (const handle of handles.values()) closeSync(handle);
  }
}

/** An external data file, which must lie in the model's folder (no absolute path, no `..`). */
function externalFile(
  modelPath: string,
  location: string,
  refuse: (message: string) => InvalidArgumentError,
): string {
  const relative = normalize(location);
  if (location === '' || isAbsolute(location) || relative === '..' || relative.startsWith(`..${sep}`))
    throw refuse(`names external data at '${location}', outside its folder`);
  return join(dirname(modelPath), relative);
}

function readRange(handles: Map<string, number>, file: string, offset: number, length: number): Uint8Array {
  let handle = handles.get(file);
  if (handle === undefined) {
    try {
      handle = openSync(file, 'r');
    } catch (error) {
      throw new InvalidArgumentError({
        argument: 'modelDir',
        message: `cannot read the external data file '${file}': ${(error as Error).message}`,
        cause: error,
      });
    }
    handles.set(file, handle);
  }
  const bytes = new Uint8Array(length);
  const read = readSync(handle, bytes, 0, length, offset);
  return bytes.subarray(0, read);
}
