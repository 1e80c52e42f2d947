import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../core/errors';
import { decodeSafetensors, encodeSafetensors, float32Of } from './safetensors';

const where = { argument: 'blob', source: '/x/model.safetensors' };

/** A file with this header (JSON text as given) and data. */
function file(header: string, data: Uint8Array = new Uint8Array(0)): Uint8Array {
  const json = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

describe('safetensors', () => {
  it('property: float32 tensors round-trip, the data 8-byte aligned, the metadata kept', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            shape: fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }),
            seed: fc.integer(),
          }),
          { maxLength: 5 },
        ),
        (specs) => {
          const tensors = specs.map((s, i) => {
            const size = s.shape.reduce((a, b) => a * b, 1);
            return {
              name: `t${i}`,
              shape: s.shape,
              values: Float32Array.from({ length: size }, (_, k) => Math.fround(Math.sin(s.seed + k) * 100)),
            };
          });
          const bytes = encodeSafetensors(tensors, { format: 'pt' });
          expect(Number(new DataView(bytes.buffer).getBigUint64(0, true)) % 8).toBe(0);
          const read = decodeSafetensors(bytes, where);
          expect(read.metadata).toEqual({ format: 'pt' });
          expect([...read.tensors.keys()]).toEqual(tensors.map((t) => t.name));
          for (const t of tensors) {
            expect(read.tensors.get(t.name)!.shape).toEqual(t.shape);
            expect(float32Of(read.tensors.get(t.name)!)).toEqual(t.values);
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it('converts float16, bfloat16 and float64 to float32', () => {
    const data = new Uint8Array(2 + 2 + 8);
    const view = new DataView(data.buffer);
    view.setUint16(0, 0x3c00, true); // f16 1.0
    view.setUint16(2, 0xc040, true); // bf16 -3.0
    view.setFloat64(4, 0.5, true);
    const bytes = file(
      JSON.stringify({
        h: { dtype: 'F16', shape: [1], data_offsets: [0, 2] },
        b: { dtype: 'BF16', shape: [1], data_offsets: [2, 4] },
        d: { dtype: 'F64', shape: [1], data_offsets: [4, 12] },
      }),
      data,
    );
    const { tensors } = decodeSafetensors(bytes, where);
    expect([...float32Of(tensors.get('h')!)!]).toEqual([1]);
    expect([...float32Of(tensors.get('b')!)!]).toEqual([-3]);
    expect([...float32Of(tensors.get('d')!)!]).toEqual([0.5]);
  });

  it.each([
    ['shorter than the length', new Uint8Array(5), /shorter than the 8-byte/],
    ['a header longer than the file', file('{}').subarray(0, 9), /claims 2 bytes/],
    ['a header that is not JSON', file('{"a":'), /not UTF-8 JSON/],
    ['a header that is an array', file('[]'), /not a JSON object/],
    [
      'an unknown dtype',
      file('{"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}}', new Uint8Array(1)),
      /dtype "F8"/,
    ],
    [
      'a negative dimension',
      file('{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}', new Uint8Array(4)),
      /shape/,
    ],
    [
      'offsets that do not match the shape',
      file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', new Uint8Array(4)),
      /needs 8 bytes/,
    ],
    [
      'overlapping tensors',
      file(
        '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}',
        new Uint8Array(4),
      ),
      /starts at byte 0, expected 4/,
    ],
    [
      'data cut short',
      file('{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', new Uint8Array(6)),
      /cut short/,
    ],
    [
      'trailing bytes',
      file('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', new Uint8Array(6)),
      /padded/,
    ],
    ['metadata that is not strings', file('{"__metadata__":{"a":1}}'), /__metadata__.a/],
  ])('refuses %s, naming the argument and file', (_, bytes, what) => {
    let error: unknown;
    try {
      decodeSafetensors(bytes, where);
    } catch (e) {
      error = e;
    }
    expect(InvalidArgumentError.isInstance(error), String(error)).toBe(true);
    expect((error as InvalidArgumentError).argument).toBe('blob');
    expect((error as Error).message).toContain('/x/model.safetensors');
    expect((error as Error).message).toMatch(what);
  });

  it('reads a header padded with spaces, as the reference writer pads it (files it wrote: python/tests)', () => {
    const header = '{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}';
    const padded = header + ' '.repeat((8 - (header.length % 8)) % 8);
    const data = new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer);
    const { tensors, metadata } = decodeSafetensors(file(padded, data), where);
    expect(metadata).toEqual({ format: 'pt' });
    expect([...float32Of(tensors.get('w')!)!]).toEqual([1, 2, 3, 4]);
  });
});
