import { describe, expect, it } from 'vitest';
import { readGguf } from './gguf';
import { dequantizeGgufTensor } from './gguf-dequantize';
import { f32Bytes, HALF, refusal, T, type TensorSpec, u16Bytes, writeGguf } from './__fixtures__/gguf-writer';

describe('readGguf', () => {
  it('reads every metadata value type, arrays included', () => {
    const bytes = writeGguf({
      metadata: {
        u8: { type: T.u8, value: 250 },
        i8: { type: T.i8, value: -5 },
        u16: { type: T.u16, value: 65000 },
        i16: { type: T.i16, value: -30000 },
        u32: { type: T.u32, value: 4_000_000_000 },
        i32: { type: T.i32, value: -2_000_000_000 },
        f32: { type: T.f32, value: 0.1 },
        yes: { type: T.bool, value: true },
        no: { type: T.bool, value: false },
        name: { type: T.str, value: 'SmolLM2 · 135M' },
        u64: { type: T.u64, value: 2 ** 40 },
        big: { type: T.u64, value: 2n ** 63n + 5n },
        i64: { type: T.i64, value: -(2n ** 62n) },
        f64: { type: T.f64, value: Math.PI },
        tokens: { type: T.arr, elementType: T.str, value: ['<|im_start|>', 'Ġthe', 'é', ''] },
        types: { type: T.arr, elementType: T.i32, value: [1, 3, -4] },
        scores: { type: T.arr, elementType: T.f32, value: [0.5, -1] },
        flags: { type: T.arr, elementType: T.bool, value: [true, false] },
        ids64: { type: T.arr, elementType: T.u64, value: [1, 2] },
        empty: { type: T.arr, elementType: T.str, value: [] },
        nested: {
          type: T.arr,
          elementType: T.arr,
          value: [
            { value: [1, 2], elementType: T.u8 },
            { value: ['a'], elementType: T.str },
          ],
        },
      },
    });
    const file = readGguf(bytes, 'meta.gguf');
    const m = file.metadata;
    expect(file.version).toBe(3);
    expect([m.get('u8'), m.get('i8'), m.get('u16'), m.get('i16'), m.get('u32'), m.get('i32')]).toEqual([
      250, -5, 65000, -30000, 4_000_000_000, -2_000_000_000,
    ]);
    expect(m.get('f32')).toBe(Math.fround(0.1));
    expect([m.get('yes'), m.get('no')]).toEqual([true, false]);
    expect(m.get('name')).toBe('SmolLM2 · 135M');
    expect(m.get('u64')).toBe(2 ** 40);
    expect(m.get('big')).toBe(2n ** 63n + 5n);
    expect(m.get('i64')).toBe(-(2n ** 62n));
    expect(m.get('f64')).toBe(Math.PI);
    expect(m.get('tokens')).toEqual(['<|im_start|>', 'Ġthe', 'é', '']);
    expect(m.get('types')).toEqual(Int32Array.from([1, 3, -4]));
    expect(m.get('scores')).toEqual(Float32Array.from([0.5, -1]));
    expect(m.get('flags')).toEqual([true, false]);
    expect(m.get('ids64')).toEqual(BigUint64Array.from([1n, 2n]));
    expect(m.get('empty')).toEqual([]);
    expect(m.get('nested')).toEqual([Uint8Array.from([1, 2]), ['a']]);
    expect(file.tensors.size).toBe(0);
  });

  it('reads GGUF version 2 too', () => {
    expect(
      readGguf(writeGguf({ version: 2, metadata: { a: { type: T.u8, value: 1 } } }), 'v2.gguf').version,
    ).toBe(2);
  });

  it('places tensor data by general.alignment, 32 by default', () => {
    const tensors: TensorSpec[] = [
      { name: 'a', type: 0, dims: [3], data: f32Bytes([1, 2, 3]) },
      { name: 'b', type: 0, dims: [2], data: f32Bytes([4, 5]) },
    ];
    for (const alignment of [undefined, 64, 8]) {
      const bytes = writeGguf({ tensors, alignment, metadata: { pad: { type: T.str, value: 'x' } } });
      const file = readGguf(bytes, 'aligned.gguf');
      const step = alignment ?? 32;
      expect(file.dataOffset % step).toBe(0);
      const b = file.tensors.get('b')!;
      expect(b.offset).toBe(file.dataOffset + Math.ceil(12 / step) * step);
      expect(Array.from(dequantizeGgufTensor(file, bytes, 'b'))).toEqual([4, 5]);
      expect(Array.from(dequantizeGgufTensor(file, bytes, 'a'))).toEqual([1, 2, 3]);
    }
  });

  it('reads from a view at any byte offset of a larger buffer, without copying the file', () => {
    const inner = writeGguf({
      tensors: [{ name: 'w', type: 1, dims: [2], data: u16Bytes([HALF.one, HALF.third]) }],
    });
    const outer = new Uint8Array(inner.length + 3);
    outer.set(inner, 1);
    const view = outer.subarray(1, 1 + inner.length);
    const file = readGguf(view, 'view.gguf');
    expect(Array.from(dequantizeGgufTensor(file, view, 'w'))).toEqual([1, 0.333251953125]);
  });

  it('describes tensors with GGUF dims, type names and byte lengths', () => {
    const q8 = new Uint8Array(34 * 2);
    const bytes = writeGguf({ tensors: [{ name: 'q', type: 8, dims: [32, 2], data: q8 }] });
    const info = readGguf(bytes, 'q.gguf').tensors.get('q')!;
    expect(info).toMatchObject({ type: 8, typeName: 'Q8_0', dims: [32, 2], byteLength: 68 });
  });

  it('refuses a file that is not GGUF, naming the source and the field', () => {
    const bad = writeGguf({});
    bad[0] = 0x46;
    const error = refusal(() => readGguf(bad, 'x.bin'));
    expect(error.argument).toBe('x.bin: magic');
    expect(error.message).toContain('not a GGUF file');
  });

  it('refuses GGUF versions other than 2 and 3', () => {
    for (const version of [1, 4]) {
      const error = refusal(() => readGguf(writeGguf({ version }), 'old.gguf'));
      expect(error.argument).toBe('old.gguf: version');
      expect(error.message).toContain(`version ${version}`);
    }
  });

  it('refuses a truncated file, naming the field it was reading', () => {
    const bytes = writeGguf({
      metadata: { 'tokenizer.ggml.tokens': { type: T.arr, elementType: T.str, value: ['a', 'bb'] } },
    });
    const error = refusal(() => readGguf(bytes.subarray(0, bytes.length - 1), 'cut.gguf'));
    expect(error.argument).toBe('cut.gguf: tokenizer.ggml.tokens');
    expect(error.message).toContain('truncated');
  });

  it('refuses an array count the file cannot hold before allocating it', () => {
    const bytes = writeGguf({ metadata: { huge: { type: T.arr, elementType: T.str, value: [] } } });
    // The count is the file's last 8 bytes (no tensors, so no padding follows), little-endian.
    new DataView(bytes.buffer).setBigUint64(bytes.length - 8, 2n ** 40n, true);
    expect(refusal(() => readGguf(bytes, 'huge.gguf')).argument).toBe('huge.gguf: huge');
  });

  it('refuses a tensor whose data runs past the end of the file', () => {
    const bytes = writeGguf({ tensors: [{ name: 'w', type: 0, dims: [4], data: f32Bytes([1, 2, 3, 4]) }] });
    const error = refusal(() => readGguf(bytes.subarray(0, bytes.length - 4), 'short.gguf'));
    expect(error.argument).toBe("short.gguf: tensor 'w'");
    expect(error.message).toContain('past the end');
  });

  it('refuses an unknown tensor type, naming the tensor', () => {
    const bytes = writeGguf({ tensors: [{ name: 'odd', type: 99, dims: [4], data: new Uint8Array(16) }] });
    const error = refusal(() => readGguf(bytes, 'odd.gguf'));
    expect(error.argument).toBe("odd.gguf: tensor 'odd'");
    expect(error.message).toContain('unknown ggml tensor type 99');
  });

  it('refuses a tensor listed twice', () => {
    const t = { name: 'w', type: 0, dims: [1], data: f32Bytes([1]) };
    expect(refusal(() => readGguf(writeGguf({ tensors: [t, t] }), 'twice.gguf')).message).toContain('twice');
  });
});

describe('dequantizeGgufTensor', () => {
  const one = (type: number, dims: number[], data: Uint8Array) => {
    const bytes = writeGguf({ tensors: [{ name: 't', type, dims, data }] });
    return dequantizeGgufTensor(readGguf(bytes, 't.gguf'), bytes, 't');
  };

  it('reads F32 in row-major order of the reversed dims', () => {
    // GGUF dims [3, 2]: two rows of three; HF shape [2, 3] holds the same element order.
    expect(Array.from(one(0, [3, 2], f32Bytes([1, 2, 3, 4, 5, 6])))).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('reads F16 exactly, subnormals and infinities included', () => {
    const values = one(
      1,
      [8],
      u16Bytes([HALF.one, HALF.minusTwo, HALF.tiny, HALF.max, 0x7c00, 0xfc00, 0x8000, HALF.third]),
    );
    expect(Array.from(values)).toEqual([1, -2, 2 ** -24, 65504, Infinity, -Infinity, -0, 0.333251953125]);
    expect(Number.isNaN(one(1, [1], u16Bytes([0x7e00]))[0])).toBe(true);
  });

  it('reads BF16 as the top half of a float32', () => {
    expect(Array.from(one(30, [3], u16Bytes([0x3f80, 0xc040, 0x3eab])))).toEqual([
      1,
      -3,
      Math.fround(0.333984375),
    ]);
  });

  it('reads Q4_0 blocks: low nibbles first, (q - 8) * d', () => {
    const block = new Uint8Array(18);
    new DataView(block.buffer).setUint16(0, HALF.half, true);
    for (let j = 0; j < 16; j++) block[2 + j] = j | ((15 - j) << 4);
    const expected = [
      ...Array.from({ length: 16 }, (_, j) => (j - 8) * 0.5),
      ...Array.from({ length: 16 }, (_, j) => (7 - j) * 0.5),
    ];
    expect(Array.from(one(2, [32], block))).toEqual(expected);
  });

  it('reads Q4_1 blocks: q * d + m', () => {
    const block = new Uint8Array(20);
    const view = new DataView(block.buffer);
    view.setUint16(0, HALF.third, true);
    view.setUint16(2, HALF.minusOne, true);
    for (let j = 0; j < 16; j++) block[4 + j] = j | (j << 4);
    const d = 0.333251953125;
    const expected = Array.from({ length: 32 }, (_, i) => Math.fround(Math.fround((i % 16) * d) - 1));
    expect(Array.from(one(3, [32], block))).toEqual(expected);
  });

  it('reads Q8_0 blocks over several rows: int8 * d', () => {
    const blocks = new Uint8Array(34 * 2);
    const view = new DataView(blocks.buffer);
    view.setUint16(0, HALF.minusTwo, true);
    view.setUint16(34, HALF.half, true);
    for (let j = 0; j < 32; j++) {
      view.setInt8(2 + j, j - 16);
      view.setInt8(36 + j, 127 - j * 8);
    }
    const expected = [
      ...Array.from({ length: 32 }, (_, j) => (j - 16) * -2),
      ...Array.from({ length: 32 }, (_, j) => (127 - j * 8) * 0.5),
    ];
    expect(Array.from(one(8, [32, 2], blocks))).toEqual(expected);
  });

  it('refuses a type it cannot dequantise, naming the tensor, the type and the supported ones', () => {
    const bytes = writeGguf({
      tensors: [{ name: 'blk.0.ffn_up.weight', type: 12, dims: [256], data: new Uint8Array(144) }],
    });
    const error = refusal(() =>
      dequantizeGgufTensor(readGguf(bytes, 'k.gguf'), bytes, 'blk.0.ffn_up.weight'),
    );
    expect(error.argument).toBe("tensor 'blk.0.ffn_up.weight'");
    expect(error.message).toContain('Q4_K');
    expect(error.message).toContain('F32, F16, BF16, Q4_0, Q4_1, Q8_0');
  });

  it('refuses a tensor the file does not have', () => {
    const bytes = writeGguf({});
    expect(refusal(() => dequantizeGgufTensor(readGguf(bytes, 'e.gguf'), bytes, 'nope')).message).toContain(
      "'nope'",
    );
  });
});
