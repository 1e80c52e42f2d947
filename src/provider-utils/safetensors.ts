import { InvalidArgumentError } from '../core/errors';
import { float32Values } from '../core/finite-values';

/**
 * The safetensors format (huggingface/safetensors, docs "Format"): an 8-byte little-endian header
 * length N, N bytes of JSON (`{name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?:
 * {string: string}}`, padded with spaces), then the tensors' bytes, little-endian, row-major, with
 * offsets relative to the end of the header. A reader checks what the reference implementation
 * checks: the header fits, the offsets tile the data exactly, each tensor's bytes match its shape.
 */

export type SafetensorsDtype = 'F64' | 'F32' | 'F16' | 'BF16' | 'I64' | 'I32' | 'I16' | 'I8' | 'U8' | 'BOOL';

const DTYPE_BYTES: Record<SafetensorsDtype, number> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U8: 1,
  BOOL: 1,
};

/** The largest header the reference implementation accepts. */
const MAX_HEADER_BYTES = 100_000_000;

export interface SafetensorsTensor {
  dtype: SafetensorsDtype;
  shape: number[];
  /** The tensor's raw little-endian bytes (a view into the file's bytes). */
  bytes: Uint8Array;
}

export interface SafetensorsFile {
  metadata: Record<string, string>;
  /** In the order of their data in the file. */
  tensors: Map<string, SafetensorsTensor>;
}

/** Float32 tensors as one safetensors file, in the order given; `metadata` goes in `__metadata__`. */
export function encodeSafetensors(
  tensors: ReadonlyArray<{ name: string; shape: readonly number[]; values: Float32Array }>,
  metadata: Record<string, string> = {},
): Uint8Array {
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  let offset = 0;
  for (const t of tensors) {
    const size = t.shape.reduce((n, d) => n * d, 1);
    if (size !== t.values.length)
      throw new InvalidArgumentError({
        argument: `tensors['${t.name}']`,
        message: `has ${t.values.length} values for shape [${t.shape.join(', ')}]`,
      });
    header[t.name] = { dtype: 'F32', shape: [...t.shape], data_offsets: [offset, offset + size * 4] };
    offset += size * 4;
  }
  let json = JSON.stringify(header);
  // Padded with spaces so that the data starts 8-byte aligned, as the reference writer does.
  const headerBytes = new TextEncoder().encode(json);
  json += ' '.repeat((8 - (headerBytes.length % 8)) % 8);
  const padded = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + padded.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded.length), true);
  out.set(padded, 8);
  let at = 8 + padded.length;
  for (const t of tensors) {
    out.set(new Uint8Array(t.values.buffer, t.values.byteOffset, t.values.byteLength), at);
    at += t.values.byteLength;
  }
  return out;
}

/**
 * Reads a safetensors file, refusing (InvalidArgumentError naming `argument` and `source`) a header
 * that is cut short, not JSON, or whose tensors overlap, leave gaps, run past the end or do not
 * match their shapes.
 */
export function decodeSafetensors(
  bytes: Uint8Array,
  where: { argument: string; source?: string },
): SafetensorsFile {
  const fail = (message: string, cause?: unknown) =>
    new InvalidArgumentError({
      argument: where.argument,
      message: `${where.source ? `${where.source} ` : ''}is not a valid safetensors file: ${message}`,
      ...(cause !== undefined && { cause }),
    });
  if (bytes.byteLength < 8) throw fail(`${bytes.byteLength} bytes, shorter than the 8-byte header length`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = view.getBigUint64(0, true);
  if (headerLength > BigInt(Math.min(MAX_HEADER_BYTES, bytes.byteLength - 8)))
    throw fail(
      `the header claims ${headerLength} bytes, the file has ${bytes.byteLength - 8} after the length`,
    );
  const n = Number(headerLength);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (error) {
    throw fail('its header is not UTF-8 JSON', error);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header))
    throw fail('its header is not a JSON object');
  const data = bytes.subarray(8 + n);
  const metadata: Record<string, string> = {};
  const entries: Array<[string, SafetensorsDtype, number[], number, number]> = [];
  for (const [name, value] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (typeof value !== 'object' || value === null || Array.isArray(value))
        throw fail('__metadata__ is not an object of strings');
      for (const [k, v] of Object.entries(value)) {
        if (typeof v !== 'string') throw fail(`__metadata__.${k} is not a string`);
        metadata[k] = v;
      }
      continue;
    }
    const info = value as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    const dtype = info?.dtype as SafetensorsDtype;
    if (typeof dtype !== 'string' || !(dtype in DTYPE_BYTES))
      throw fail(
        `tensor '${name}' has dtype ${JSON.stringify(info?.dtype)} (known: ${Object.keys(DTYPE_BYTES).join(', ')})`,
      );
    const shape = info.shape;
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      throw fail(`tensor '${name}' has shape ${JSON.stringify(shape)}`);
    const offsets = info.data_offsets;
    if (
      !Array.isArray(offsets) ||
      offsets.length !== 2 ||
      !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) ||
      offsets[1] < offsets[0]
    )
      throw fail(`tensor '${name}' has data_offsets ${JSON.stringify(offsets)}`);
    const expected = (shape as number[]).reduce((a, d) => a * d, 1) * DTYPE_BYTES[dtype];
    if (offsets[1] - offsets[0] !== expected)
      throw fail(
        `tensor '${name}' (${dtype} [${shape.join(', ')}]) needs ${expected} bytes, its offsets span ${offsets[1] - offsets[0]}`,
      );
    entries.push([name, dtype, shape as number[], offsets[0], offsets[1]]);
  }
  entries.sort((a, b) => a[3] - b[3]);
  let end = 0;
  const tensors = new Map<string, SafetensorsTensor>();
  for (const [name, dtype, shape, begin, stop] of entries) {
    if (begin !== end)
      throw fail(
        `tensor '${name}' starts at byte ${begin}, expected ${end} (tensors must tile the data without gaps or overlaps)`,
      );
    end = stop;
    tensors.set(name, { dtype, shape, bytes: data.subarray(begin, stop) });
  }
  if (end !== data.byteLength)
    throw fail(
      `the tensors cover ${end} bytes of data, the file holds ${data.byteLength} (cut short or padded)`,
    );
  return { metadata, tensors };
}

/** A floating-point tensor's values as float32 (F16, BF16 and F64 converted; a copy, never a view). */
export function float32Of(tensor: SafetensorsTensor): Float32Array | null {
  const { bytes, dtype } = tensor;
  if (dtype === 'F32') return float32Values(bytes);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const n = bytes.byteLength / DTYPE_BYTES[dtype];
  const out = new Float32Array(n);
  switch (dtype) {
    case 'F64':
      for (let i = 0; i < n; i++) out[i] = view.getFloat64(i * 8, true);
      return out;
    case 'BF16': {
      const word = new DataView(new ArrayBuffer(4));
      for (let i = 0; i < n; i++) {
        word.setUint32(0, view.getUint16(i * 2, true) << 16);
        out[i] = word.getFloat32(0);
      }
      return out;
    }
    case 'F16':
      for (let i = 0; i < n; i++) out[i] = halfToFloat(view.getUint16(i * 2, true));
      return out;
    default:
      return null;
  }
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 0x1f) return fraction === 0 ? sign * Number.POSITIVE_INFINITY : Number.NaN;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}
