import { InvalidArgumentError } from '../../core/errors';

// GGUF, llama.cpp's single-file model format (ggml/docs/gguf.md): a header, key-value metadata, a
// table of tensors, then the tensor data, each tensor at an aligned offset. Everything here reads
// from the caller's bytes in place (the one copy made is each dequantised tensor), so a memory-mapped
// or fully read file of several GB costs nothing more to open.

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const DEFAULT_ALIGNMENT = 32;

/** A metadata value. 64-bit integers are numbers when exact, bigints beyond 2^53. */
export type GgufValue =
  | number
  | bigint
  | boolean
  | string
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array
  | boolean[]
  | string[]
  | GgufValue[];

export interface GgufTensorInfo {
  /** ggml type id (GGML_TYPE_*). */
  type: number;
  typeName: string;
  /** GGUF order, fastest-varying first (ne0, ne1, ...): the reverse of a Hugging Face shape. */
  dims: number[];
  /** Absolute byte offset of the tensor's data in the file (the data section's start included). */
  offset: number;
  byteLength: number;
}

export interface GgufFile {
  version: number;
  metadata: Map<string, GgufValue>;
  tensors: Map<string, GgufTensorInfo>;
  /** Where the tensor data section starts (aligned to `general.alignment`). */
  dataOffset: number;
}

// ggml's type table (ggml/include/ggml.h, ggml/src/ggml.c type_traits): elements per block and
// bytes per block. Every type a file may hold is listed, so a tensor's byte length is known even
// when its values cannot be dequantised here; an id missing from the table is a refusal.
const GGML_TYPES: ReadonlyMap<number, { name: string; blockSize: number; typeSize: number }> = new Map([
  [0, { name: 'F32', blockSize: 1, typeSize: 4 }],
  [1, { name: 'F16', blockSize: 1, typeSize: 2 }],
  [2, { name: 'Q4_0', blockSize: 32, typeSize: 18 }],
  [3, { name: 'Q4_1', blockSize: 32, typeSize: 20 }],
  [6, { name: 'Q5_0', blockSize: 32, typeSize: 22 }],
  [7, { name: 'Q5_1', blockSize: 32, typeSize: 24 }],
  [8, { name: 'Q8_0', blockSize: 32, typeSize: 34 }],
  [9, { name: 'Q8_1', blockSize: 32, typeSize: 36 }],
  [10, { name: 'Q2_K', blockSize: 256, typeSize: 84 }],
  [11, { name: 'Q3_K', blockSize: 256, typeSize: 110 }],
  [12, { name: 'Q4_K', blockSize: 256, typeSize: 144 }],
  [13, { name: 'Q5_K', blockSize: 256, typeSize: 176 }],
  [14, { name: 'Q6_K', blockSize: 256, typeSize: 210 }],
  [15, { name: 'Q8_K', blockSize: 256, typeSize: 292 }],
  [16, { name: 'IQ2_XXS', blockSize: 256, typeSize: 66 }],
  [17, { name: 'IQ2_XS', blockSize: 256, typeSize: 74 }],
  [18, { name: 'IQ3_XXS', blockSize: 256, typeSize: 98 }],
  [19, { name: 'IQ1_S', blockSize: 256, typeSize: 50 }],
  [20, { name: 'IQ4_NL', blockSize: 32, typeSize: 18 }],
  [21, { name: 'IQ3_S', blockSize: 256, typeSize: 110 }],
  [22, { name: 'IQ2_S', blockSize: 256, typeSize: 82 }],
  [23, { name: 'IQ4_XS', blockSize: 256, typeSize: 136 }],
  [24, { name: 'I8', blockSize: 1, typeSize: 1 }],
  [25, { name: 'I16', blockSize: 1, typeSize: 2 }],
  [26, { name: 'I32', blockSize: 1, typeSize: 4 }],
  [27, { name: 'I64', blockSize: 1, typeSize: 8 }],
  [28, { name: 'F64', blockSize: 1, typeSize: 8 }],
  [29, { name: 'IQ1_M', blockSize: 256, typeSize: 56 }],
  [30, { name: 'BF16', blockSize: 1, typeSize: 2 }],
  [34, { name: 'TQ1_0', blockSize: 256, typeSize: 54 }],
  [35, { name: 'TQ2_0', blockSize: 256, typeSize: 66 }],
  [39, { name: 'MXFP4', blockSize: 32, typeSize: 17 }],
  [40, { name: 'NVFP4', blockSize: 64, typeSize: 36 }],
  [41, { name: 'Q1_0', blockSize: 128, typeSize: 18 }],
]);

/** The types `dequantizeGgufTensor` reads. */
export const GGUF_DEQUANTIZABLE_TYPES = ['F32', 'F16', 'BF16', 'Q4_0', 'Q4_1', 'Q8_0'] as const;

// GGUF metadata value types (gguf.md, `enum gguf_metadata_value_type`).
enum ValueType {
  Uint8 = 0,
  Int8 = 1,
  Uint16 = 2,
  Int16 = 3,
  Uint32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  Uint64 = 10,
  Int64 = 11,
  Float64 = 12,
}

const SCALAR_SIZES: Record<number, number> = {
  0: 1,
  1: 1,
  2: 2,
  3: 2,
  4: 4,
  5: 4,
  6: 4,
  7: 1,
  10: 8,
  11: 8,
  12: 8,
};

const utf8 = new TextDecoder('utf-8');

class Reader {
  position = 0;
  private readonly view: DataView;

  constructor(
    readonly bytes: Uint8Array,
    readonly source: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  fail(field: string, message: string): never {
    throw new InvalidArgumentError({ argument: `${this.source}: ${field}`, message });
  }

  need(count: number, field: string): void {
    if (this.position + count > this.bytes.length)
      this.fail(
        field,
        `the file is truncated: ${count} more bytes needed at byte ${this.position}, but it has ${this.bytes.length}`,
      );
  }

  u8(field: string): number {
    this.need(1, field);
    return this.view.getUint8(this.position++);
  }

  u32(field: string): number {
    this.need(4, field);
    const value = this.view.getUint32(this.position, true);
    this.position += 4;
    return value;
  }

  /** A u64 used as a count, length or offset: it must be exact as a number. */
  size(field: string): number {
    this.need(8, field);
    const value = this.view.getBigUint64(this.position, true);
    this.position += 8;
    if (value > BigInt(Number.MAX_SAFE_INTEGER)) this.fail(field, `the size ${value} is impossibly large`);
    return Number(value);
  }

  string(field: string): string {
    const length = this.size(field);
    this.need(length, field);
    const start = this.position;
    this.position += length;
    return decodeUtf8(this.bytes, start, this.position);
  }

  scalar(type: number, field: string): number | bigint | boolean {
    const size = SCALAR_SIZES[type]!;
    this.need(size, field);
    const at = this.position;
    this.position += size;
    const v = this.view;
    switch (type) {
      case ValueType.Uint8:
        return v.getUint8(at);
      case ValueType.Int8:
        return v.getInt8(at);
      case ValueType.Uint16:
        return v.getUint16(at, true);
      case ValueType.Int16:
        return v.getInt16(at, true);
      case ValueType.Uint32:
        return v.getUint32(at, true);
      case ValueType.Int32:
        return v.getInt32(at, true);
      case ValueType.Float32:
        return v.getFloat32(at, true);
      case ValueType.Bool:
        return v.getUint8(at) !== 0;
      case ValueType.Uint64:
        return exact(v.getBigUint64(at, true));
      case ValueType.Int64:
        return exact(v.getBigInt64(at, true));
      default:
        return v.getFloat64(at, true);
    }
  }

  value(type: number, field: string, depth = 0): GgufValue {
    if (type === ValueType.String) return this.string(field);
    if (type === ValueType.Array) return this.array(field, depth);
    if (SCALAR_SIZES[type] === undefined) this.fail(field, `unknown metadata value type ${type}`);
    return this.scalar(type, field);
  }

  array(field: string, depth: number): GgufValue {
    // Nesting is legal but never deep in practice; the bound keeps a crafted file off the stack.
    if (depth > 8) this.fail(field, 'arrays are nested more than 8 deep');
    const type = this.u32(field);
    const count = this.size(field);
    const size = SCALAR_SIZES[type];
    if (type === ValueType.String) {
      // Each string is at least its 8-byte length, so a count the file cannot hold fails before
      // anything is allocated for it.
      this.need(count * 8, field);
      const out = new Array<string>(count);
      for (let i = 0; i < count; i++) out[i] = this.string(field);
      return out;
    }
    if (type === ValueType.Array) {
      this.need(count * 12, field);
      const out = new Array<GgufValue>(count);
      for (let i = 0; i < count; i++) out[i] = this.array(field, depth + 1);
      return out;
    }
    if (size === undefined) this.fail(field, `unknown array element type ${type}`);
    this.need(count * size, field);
    const start = this.position;
    this.position += count * size;
    if (type === ValueType.Bool) return Array.from(this.bytes.subarray(start, this.position), (b) => b !== 0);
    // Copied into a fresh, aligned buffer a typed array can view (the data need not be aligned in
    // the file); numeric arrays are small next to the tensors, so the copy is cheap.
    const copy = littleEndianCopy(this.bytes, start, this.position, size);
    switch (type) {
      case ValueType.Uint8:
        return new Uint8Array(copy);
      case ValueType.Int8:
        return new Int8Array(copy);
      case ValueType.Uint16:
        return new Uint16Array(copy);
      case ValueType.Int16:
        return new Int16Array(copy);
      case ValueType.Uint32:
        return new Uint32Array(copy);
      case ValueType.Int32:
        return new Int32Array(copy);
      case ValueType.Float32:
        return new Float32Array(copy);
      case ValueType.Uint64:
        return new BigUint64Array(copy);
      case ValueType.Int64:
        return new BigInt64Array(copy);
      default:
        return new Float64Array(copy);
    }
  }
}

export const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The bytes in host order for a typed-array view (GGUF as read here is little-endian). */
function littleEndianCopy(bytes: Uint8Array, start: number, end: number, elementSize: number): ArrayBuffer {
  // A copy through the constructor: a Node Buffer's slice() is a view, not a copy.
  const copy = new Uint8Array(bytes.subarray(start, end));
  if (!LITTLE_ENDIAN_HOST && elementSize > 1)
    for (let i = 0; i < copy.length; i += elementSize) copy.subarray(i, i + elementSize).reverse();
  return copy.buffer;
}

function exact(value: bigint): number | bigint {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

// Tokenizer vocabularies are tens of thousands of short, mostly ASCII strings; building those
// directly is several times faster than a TextDecoder call each.
function decodeUtf8(bytes: Uint8Array, start: number, end: number): string {
  if (end - start <= 32) {
    let ascii = '';
    for (let i = start; i < end; i++) {
      const b = bytes[i]!;
      if (b >= 0x80) return utf8.decode(bytes.subarray(start, end));
      ascii += String.fromCharCode(b);
    }
    return ascii;
  }
  return utf8.decode(bytes.subarray(start, end));
}

/**
 * Reads a GGUF file's header, metadata and tensor table (versions 2 and 3, little-endian). The
 * tensors stay in `bytes`; `source` names the file in errors.
 */
export function readGguf(bytes: Uint8Array, source: string): GgufFile {
  const reader: Reader = new Reader(bytes, source);
  if (bytes.length < 4 || new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true) !== MAGIC)
    reader.fail('magic', 'not a GGUF file: it does not start with the bytes "GGUF"');
  reader.position = 4;
  const version = reader.u32('version');
  if (version !== 2 && version !== 3)
    reader.fail(
      'version',
      version === 1
        ? 'GGUF version 1 is not supported (only 2 and 3); convert the model again with a current llama.cpp'
        : (version & 0xffff) === 0 && version !== 0
          ? `version ${version} looks big-endian; only little-endian GGUF files are supported`
          : `GGUF version ${version} is not supported (only 2 and 3)`,
    );
  const tensorCount = reader.size('tensor_count');
  const metadataCount = reader.size('metadata_kv_count');

  const metadata = new Map<string, GgufValue>();
  for (let i = 0; i < metadataCount; i++) {
    const key = reader.string(`metadata key ${i}`);
    const type = reader.u32(key);
    metadata.set(key, reader.value(type, key));
  }

  const alignmentValue = metadata.get('general.alignment') ?? DEFAULT_ALIGNMENT;
  if (!(typeof alignmentValue === 'number' && Number.isInteger(alignmentValue) && alignmentValue > 0))
    reader.fail('general.alignment', `must be a positive integer, got ${String(alignmentValue)}`);
  const alignment = alignmentValue as number;

  const entries: Array<{
    name: string;
    type: number;
    typeName: string;
    dims: number[];
    relative: number;
    byteLength: number;
  }> = [];
  const names = new Set<string>();
  for (let i = 0; i < tensorCount; i++) {
    const name = reader.string(`tensor ${i} name`);
    const field = `tensor '${name}'`;
    if (names.has(name)) reader.fail(field, 'the tensor is listed twice');
    names.add(name);
    const rank = reader.u32(field);
    // ggml's GGML_MAX_DIMS.
    if (rank < 1 || rank > 4) reader.fail(field, `has ${rank} dimensions; a ggml tensor has 1 to 4`);
    const dims: number[] = [];
    for (let d = 0; d < rank; d++) dims.push(reader.size(field));
    const type = reader.u32(field);
    const relative = reader.size(field);
    const traits = GGML_TYPES.get(type);
    if (traits === undefined)
      reader.fail(field, `has the unknown ggml tensor type ${type}; the file may need a newer reader`);
    const elements = dims.reduce((a, b) => a * b, 1);
    if (!Number.isSafeInteger(elements))
      reader.fail(field, `has impossibly many elements (${dims.join(' x ')})`);
    if (dims[0]! % traits.blockSize !== 0)
      reader.fail(field, `its rows (${dims[0]}) are not whole ${traits.name} blocks of ${traits.blockSize}`);
    if (relative % alignment !== 0)
      reader.fail(field, `its data offset ${relative} is not aligned to ${alignment}`);
    entries.push({
      name,
      type,
      typeName: traits.name,
      dims,
      relative,
      byteLength: (elements / traits.blockSize) * traits.typeSize,
    });
  }

  const dataOffset = Math.ceil(reader.position / alignment) * alignment;
  const tensors = new Map<string, GgufTensorInfo>();
  for (const entry of entries) {
    const offset = dataOffset + entry.relative;
    if (offset + entry.byteLength > bytes.length)
      reader.fail(
        `tensor '${entry.name}'`,
        `its data (bytes ${offset} to ${offset + entry.byteLength}) runs past the end of the file (${bytes.length} bytes); the file is truncated`,
      );
    tensors.set(entry.name, {
      type: entry.type,
      typeName: entry.typeName,
      dims: entry.dims,
      offset,
      byteLength: entry.byteLength,
    });
  }
  return { version, metadata, tensors, dataOffset };
}
