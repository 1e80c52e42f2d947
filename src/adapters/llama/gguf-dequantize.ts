import { InvalidArgumentError } from '../../core/errors';
import { GGUF_DEQUANTIZABLE_TYPES, type GgufFile, LITTLE_ENDIAN_HOST } from './gguf';

// GGUF tensors to float32 (gguf.ts reads the file; this expands its blocks).

// Half to single precision, every one of the 65536 patterns exactly (subnormals, infinities and
// NaNs included); built once, on first use.
let halfTable: Float32Array | undefined;
function halfToFloatTable(): Float32Array {
  if (halfTable !== undefined) return halfTable;
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    table[h] =
      exponent === 0
        ? sign * mantissa * 2 ** -24
        : exponent === 31
          ? mantissa === 0
            ? sign * Number.POSITIVE_INFINITY
            : Number.NaN
          : sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
  }
  halfTable = table;
  return table;
}

/**
 * A tensor's values as float32, row-major in the Hugging Face shape (the reverse of `dims`; ggml's
 * ne0 is the last, fastest axis, so the element order is the file's). Quantised blocks follow
 * ggml's reference dequantisation (ggml-quants.c, gguf-py's quants.py) and match it exactly.
 */
export function dequantizeGgufTensor(file: GgufFile, bytes: Uint8Array, name: string): Float32Array {
  const info = file.tensors.get(name);
  if (info === undefined)
    throw new InvalidArgumentError({ argument: 'name', message: `the GGUF file has no tensor '${name}'` });
  const elements = info.dims.reduce((a, b) => a * b, 1);
  const out = new Float32Array(elements);
  const start = info.offset;
  const view = new DataView(bytes.buffer, bytes.byteOffset + start, info.byteLength);
  const data = bytes.subarray(start, start + info.byteLength);
  const f = Math.fround;
  switch (info.typeName) {
    case 'F32':
      if (LITTLE_ENDIAN_HOST) out.set(new Float32Array(new Uint8Array(data).buffer));
      else for (let i = 0; i < elements; i++) out[i] = view.getFloat32(i * 4, true);
      return out;
    case 'F16': {
      const half = halfToFloatTable();
      for (let i = 0; i < elements; i++) out[i] = half[view.getUint16(i * 2, true)]!;
      return out;
    }
    case 'BF16': {
      // bfloat16 is the top half of a float32.
      const bits = new Uint32Array(out.buffer);
      for (let i = 0; i < elements; i++) bits[i] = view.getUint16(i * 2, true) << 16;
      return out;
    }
    case 'Q4_0': {
      // block_q4_0: f16 d, 16 bytes; byte j holds element j (low nibble) and j + 16 (high).
      const half = halfToFloatTable();
      for (let o = 0, e = 0; e < elements; o += 18, e += 32) {
        const d = half[view.getUint16(o, true)]!;
        for (let j = 0; j < 16; j++) {
          const q = data[o + 2 + j]!;
          out[e + j] = ((q & 0x0f) - 8) * d;
          out[e + j + 16] = ((q >> 4) - 8) * d;
        }
      }
      return out;
    }
    case 'Q4_1': {
      // block_q4_1: f16 d, f16 m, 16 bytes as Q4_0's; q * d + m, the product rounded to float32
      // before the sum, as gguf-py's numpy code rounds it (no fused multiply-add).
      const half = halfToFloatTable();
      for (let o = 0, e = 0; e < elements; o += 20, e += 32) {
        const d = half[view.getUint16(o, true)]!;
        const m = half[view.getUint16(o + 2, true)]!;
        for (let j = 0; j < 16; j++) {
          const q = data[o + 4 + j]!;
          out[e + j] = f((q & 0x0f) * d) + m;
          out[e + j + 16] = f((q >> 4) * d) + m;
        }
      }
      return out;
    }
    case 'Q8_0': {
      // block_q8_0: f16 d, 32 int8.
      const half = halfToFloatTable();
      for (let o = 0, e = 0; e < elements; o += 34, e += 32) {
        const d = half[view.getUint16(o, true)]!;
        for (let j = 0; j < 32; j++) out[e + j] = view.getInt8(o + 2 + j) * d;
      }
      return out;
    }
    default:
      throw new InvalidArgumentError({
        argument: `tensor '${name}'`,
        message: `its type ${info.typeName} cannot be dequantised here (supported: ${GGUF_DEQUANTIZABLE_TYPES.join(', ')}); convert the model to one of those types`,
      });
  }
}
