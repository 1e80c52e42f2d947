import { expect } from 'vitest';
import { InvalidArgumentError } from '../../../core/errors';

// --- A small GGUF writer (gguf.md), enough to build every case the reader must handle. ---

export const T = {
  u8: 0,
  i8: 1,
  u16: 2,
  i16: 3,
  u32: 4,
  i32: 5,
  f32: 6,
  bool: 7,
  str: 8,
  arr: 9,
  u64: 10,
  i64: 11,
  f64: 12,
};
export type Value = { type: number; value: unknown; elementType?: number };
export interface TensorSpec {
  name: string;
  type: number;
  dims: number[];
  data: Uint8Array;
}

export class ByteWriter {
  private chunks: number[] = [];
  u8(v: number) {
    this.chunks.push(v & 0xff);
  }
  raw(bytes: ArrayLike<number>) {
    for (let i = 0; i < bytes.length; i++) this.chunks.push(bytes[i]!);
  }
  fixed(size: number, write: (view: DataView) => void) {
    const view = new DataView(new ArrayBuffer(size));
    write(view);
    this.raw(new Uint8Array(view.buffer));
  }
  u32(v: number) {
    this.fixed(4, (d) => d.setUint32(0, v, true));
  }
  u64(v: number | bigint) {
    this.fixed(8, (d) => d.setBigUint64(0, BigInt(v), true));
  }
  str(s: string) {
    const bytes = new TextEncoder().encode(s);
    this.u64(bytes.length);
    this.raw(bytes);
  }
  get length() {
    return this.chunks.length;
  }
  bytes() {
    return Uint8Array.from(this.chunks);
  }
}

export function writeValue(w: ByteWriter, type: number, value: unknown, elementType?: number) {
  switch (type) {
    case T.u8:
    case T.bool:
      return w.u8(typeof value === 'boolean' ? Number(value) : (value as number));
    case T.i8:
      return w.fixed(1, (d) => d.setInt8(0, value as number));
    case T.u16:
      return w.fixed(2, (d) => d.setUint16(0, value as number, true));
    case T.i16:
      return w.fixed(2, (d) => d.setInt16(0, value as number, true));
    case T.u32:
      return w.u32(value as number);
    case T.i32:
      return w.fixed(4, (d) => d.setInt32(0, value as number, true));
    case T.f32:
      return w.fixed(4, (d) => d.setFloat32(0, value as number, true));
    case T.f64:
      return w.fixed(8, (d) => d.setFloat64(0, value as number, true));
    case T.u64:
      return w.u64(value as number | bigint);
    case T.i64:
      return w.fixed(8, (d) => d.setBigInt64(0, BigInt(value as number | bigint), true));
    case T.str:
      return w.str(value as string);
    default: {
      const items = value as unknown[];
      w.u32(elementType!);
      w.u64(items.length);
      for (const item of items) {
        if (elementType === T.arr) {
          const inner = item as Value;
          writeValue(w, T.arr, inner.value, inner.elementType);
        } else writeValue(w, elementType!, item);
      }
    }
  }
}

export function writeGguf(options: {
  version?: number;
  metadata?: Record<string, Value>;
  tensors?: TensorSpec[];
  alignment?: number;
}): Uint8Array {
  const alignment = options.alignment ?? 32;
  const metadata = { ...options.metadata };
  if (options.alignment !== undefined) metadata['general.alignment'] = { type: T.u32, value: alignment };
  const tensors = options.tensors ?? [];
  const w = new ByteWriter();
  w.raw([0x47, 0x47, 0x55, 0x46]);
  w.u32(options.version ?? 3);
  w.u64(tensors.length);
  w.u64(Object.keys(metadata).length);
  for (const [key, { type, value, elementType }] of Object.entries(metadata)) {
    w.str(key);
    w.u32(type);
    writeValue(w, type, value, elementType);
  }
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    offsets.push(offset);
    offset = Math.ceil((offset + t.data.length) / alignment) * alignment;
  }
  tensors.forEach((t, i) => {
    w.str(t.name);
    w.u32(t.dims.length);
    for (const d of t.dims) w.u64(d);
    w.u32(t.type);
    w.u64(offsets[i]!);
  });
  for (const t of tensors) {
    while (w.length % alignment !== 0) w.u8(0);
    w.raw(t.data);
  }
  return w.bytes();
}

export const f32Bytes = (values: number[]) => new Uint8Array(Float32Array.from(values).buffer);
export const u16Bytes = (values: number[]) => new Uint8Array(Uint16Array.from(values).buffer);

export function refusal(run: () => unknown): InvalidArgumentError {
  try {
    run();
  } catch (error) {
    expect(InvalidArgumentError.isInstance(error)).toBe(true);
    return error as InvalidArgumentError;
  }
  throw new Error('expected an InvalidArgumentError');
}

// f16 bit patterns and their values.
export const HALF = {
  one: 0x3c00,
  minusTwo: 0xc000,
  half: 0x3800,
  minusOne: 0xbc00,
  tiny: 0x0001,
  max: 0x7bff,
  third: 0x3555,
};

