import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../core/errors';
import { createOnnxPolicy } from './policy';
import { checkOnnxWeights } from './weights';

const FIXTURE = join(import.meta.dirname, '__fixtures__', 'tiny-gpt');
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** The fixture's files in a temp folder, model.onnx changed by `change`. */
async function exportWith(change: (model: Uint8Array) => Uint8Array): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-onnx-weights-'));
  dirs.push(dir);
  for (const entry of await readdir(FIXTURE, { withFileTypes: true }))
    if (entry.isFile()) await copyFile(join(FIXTURE, entry.name), join(dir, entry.name));
  const path = join(dir, 'model.onnx');
  await writeFile(path, change(new Uint8Array(await readFile(path))));
  return dir;
}

/**
 * Sets float32 element `index` of initializer `name` (its raw_data, field 9, follows its name,
 * field 8, as serialisers write fields in order) to `value`, found without the code under test.
 */
const setInitializer = (name: string, index: number, value: number) => (model: Uint8Array) => {
  const needle = Uint8Array.from([...new TextEncoder().encode(name), 0x4a]);
  const at = Buffer.from(model).indexOf(Buffer.from(needle));
  expect(at, `initializer ${name}`).toBeGreaterThan(0);
  let i = at + needle.length;
  while (model[i]! >= 0x80) i++;
  const copy = model.slice();
  new DataView(copy.buffer).setFloat32(i + 1 + index * 4, value, true);
  return copy;
};

/** A hand-written ModelProto with one initializer, its fields given as protobuf bytes. */
function modelWith(tensor: number[]): Uint8Array {
  const delimited = (field: number, bytes: number[]) => [(field << 3) | 2, ...varint(bytes.length), ...bytes];
  const graph = delimited(5, tensor);
  return Uint8Array.from([0x08, 8, ...delimited(7, graph)]);
}
const varint = (n: number) => {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  return [...out, n];
};
const text = (field: number, s: string) => {
  const bytes = [...new TextEncoder().encode(s)];
  return [(field << 3) | 2, ...varint(bytes.length), ...bytes];
};

describe('the weights of an ONNX export', () => {
  it.each([
    ['transformer.wte.weight', 0, Number.NaN, /NaN/],
    ['transformer.h.0.ln_1.weight', 3, Number.POSITIVE_INFINITY, /Infinity/],
    ['transformer.h.0.attn.c_attn.bias', 1, Number.NEGATIVE_INFINITY, /-Infinity/],
  ])(
    'createOnnxPolicy refuses %s holding a non-finite value, naming the file and initializer',
    async (name, index, value, what) => {
      const dir = await exportWith(setInitializer(name, index, value));
      const error = await createOnnxPolicy({ modelDir: dir, intraOpThreads: 1 }).then(
        async (policy) => {
          await policy.dispose();
          return null;
        },
        (e: unknown) => e,
      );
      expect(InvalidArgumentError.isInstance(error), String(error)).toBe(true);
      expect((error as InvalidArgumentError).argument).toBe('modelDir');
      expect((error as Error).message).toContain(join(dir, 'model.onnx'));
      expect((error as Error).message).toContain(`initializer '${name}' (element ${index}`);
      expect((error as Error).message).toMatch(what);
    },
  );

  it('loads the untouched export', async () => {
    const policy = await createOnnxPolicy({ modelDir: await exportWith((m) => m), intraOpThreads: 1 });
    await policy.dispose();
  });

  it('checks float_data, float16 and bfloat16 bits, and external data files inside the folder only', async () => {
    const dims = [0x08, 2];
    const floats = (values: number[]) => {
      const bytes = new Uint8Array(values.length * 4);
      values.forEach((v, i) => new DataView(bytes.buffer).setFloat32(i * 4, v, true));
      return [0x22, ...varint(bytes.length), ...bytes];
    };
    // float_data (field 4, packed).
    expect(() =>
      checkOnnxWeights('m.onnx', modelWith([...dims, 0x10, 1, ...text(8, 'w'), ...floats([1, Number.NaN])])),
    ).toThrow(/holds NaN in initializer 'w' \(element 1\)/);
    expect(() =>
      checkOnnxWeights('m.onnx', modelWith([...dims, 0x10, 1, ...text(8, 'w'), ...floats([1, 2])])),
    ).not.toThrow();
    // float16 (10) and bfloat16 (16) as raw bits: 0x7c00 is +Infinity in float16, 0xff80 -Infinity in bfloat16.
    const raw = (bits: number[]) => [0x4a, bits.length * 2, ...bits.flatMap((b) => [b & 0xff, b >> 8])];
    expect(() =>
      checkOnnxWeights('m.onnx', modelWith([...dims, 0x10, 10, ...text(8, 'h'), ...raw([0x3c00, 0x7c00])])),
    ).toThrow(/holds Infinity in initializer 'h' \(element 1\)/);
    expect(() =>
      checkOnnxWeights('m.onnx', modelWith([...dims, 0x10, 16, ...text(8, 'b'), ...raw([0xff80, 0])])),
    ).toThrow(/holds -Infinity in initializer 'b' \(element 0\)/);
    expect(() =>
      checkOnnxWeights('m.onnx', modelWith([...dims, 0x10, 10, ...text(8, 'h'), ...raw([0x3c00, 0x7bff])])),
    ).not.toThrow();
    // External data (data_location 14 = 1, external_data 13 {key 1, value 2}).
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-onnx-external-'));
    dirs.push(dir);
    const values = new Uint8Array(16);
    new DataView(values.buffer).setFloat32(12, Number.NaN, true);
    await writeFile(join(dir, 'model.onnx_data'), values);
    const entry = (key: string, value: string) => {
      const bytes = [...text(1, key), ...text(2, value)];
      return [0x6a, ...varint(bytes.length), ...bytes];
    };
    const external = (location: string, offset: string) =>
      modelWith([
        ...dims,
        0x10,
        1,
        ...text(8, 'e'),
        ...entry('location', location),
        ...entry('offset', offset),
        0x70,
        1,
      ]);
    const model = join(dir, 'model.onnx');
    expect(() => checkOnnxWeights(model, external('model.onnx_data', '8'))).toThrow(
      /holds NaN in initializer 'e' \(element 1, in .*model\.onnx_data\)/,
    );
    expect(() => checkOnnxWeights(model, external('model.onnx_data', '0'))).not.toThrow();
    expect(() => checkOnnxWeights(model, external('../outside.bin', '0'))).toThrow(/outside its folder/);
    expect(() => checkOnnxWeights(model, external('/etc/passwd', '0'))).toThrow(/outside its folder/);
    expect(() => checkOnnxWeights(model, Uint8Array.from([0x3a, 0x10, 1]))).toThrow(InvalidArgumentError);
  });
});
