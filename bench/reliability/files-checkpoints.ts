// Tampered checkpoints for bench/reliability/files.ts: a tfjs policy's and the ICD pointer
// selector's in a JSON Lines store, and an ONNX export; each must be refused naming the file.
import { createHash } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createPointerSelector } from '../../src/adapters/icd/pointer-selector';
import { createOnnxPolicy } from '../../src/adapters/onnx/policy';
import { createJsonlStore } from '../../src/adapters/store/jsonl/index';
import { withTensorValue } from '../../src/adapters/tfjs/__fixtures__/safetensors-edit';
import { createTfjsPolicy } from '../../src/adapters/tfjs/policy';
import { SearcherError } from '../../src/core/errors';
import type { PolicyCheckpoint } from '../../src/ports/policy-backend';
import { readPolicyCheckpoint, writePolicyCheckpoint } from '../../src/run/checkpoints';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const setFloat = (index: number, value: number) => (bytes: Uint8Array) => {
  const copy = bytes.slice();
  new DataView(copy.buffer).setFloat32(index * 4, value, true);
  return copy;
};

/** How a call ended: accepted, a typed error whose message names `file`, or something else. */
export async function outcome(
  run: () => Promise<unknown>,
  names: string[],
): Promise<'accepted' | 'named' | string> {
  try {
    await run();
    return 'accepted';
  } catch (error) {
    const message = (error as Error)?.message ?? String(error);
    if (!SearcherError.isInstance(error)) return `untyped: ${message.slice(0, 160)}`;
    const missing = names.filter((n) => !message.includes(n));
    return missing.length === 0
      ? 'named'
      : `typed, not naming ${missing.join(', ')}: ${message.slice(0, 200)}`;
  }
}

interface Tampering {
  name: string;
  blob?: [string, (bytes: Uint8Array) => Uint8Array];
  state?: (state: { policy: Record<string, unknown> }) => void;
  record?: (data: Record<string, unknown>) => void;
  rechecksum?: boolean;
  removeBlob?: string;
  /** The file the error must name, relative to the checkpoint folder. */
  names: string;
}

/** Sets float32 element `index` of tensor `tensor` in a safetensors file to `value`. */
const setTensor = (tensor: string, index: number, value: number) => (bytes: Uint8Array) =>
  withTensorValue(bytes, tensor, index, value);

// The tfjs checkpoint is a Hugging Face folder: model.safetensors, optimizer.safetensors (AdamW's
// exp_avg and exp_avg_sq per tensor) and the JSON files beside them.
const TFJS_TAMPERING: Tampering[] = [
  {
    name: 'NaN in weights, checksums recomputed',
    blob: ['model.safetensors', setTensor('transformer.wte.weight', 0, Number.NaN)],
    names: 'policy/model.safetensors',
  },
  {
    name: '+Infinity in weights, checksums recomputed',
    blob: ['model.safetensors', setTensor('transformer.h.0.mlp.c_fc.weight', 900, Number.POSITIVE_INFINITY)],
    names: 'policy/model.safetensors',
  },
  {
    name: '-Infinity in first moments',
    blob: ['optimizer.safetensors', setTensor('exp_avg.transformer.wpe.weight', 3, Number.NEGATIVE_INFINITY)],
    names: 'policy/optimizer.safetensors',
  },
  {
    name: 'NaN in second moments',
    blob: ['optimizer.safetensors', setTensor('exp_avg_sq.transformer.ln_f.weight', 7, Number.NaN)],
    names: 'policy/optimizer.safetensors',
  },
  {
    name: 'negative second moment',
    blob: ['optimizer.safetensors', setTensor('exp_avg_sq.transformer.ln_f.weight', 7, -1)],
    names: 'policy/optimizer.safetensors',
  },
  { name: "record's state checksum deleted", record: (d) => delete d.stateSha256, names: 'state.json' },
  {
    name: "state.json's blob checksums deleted",
    state: (s) => delete s.policy.sha256,
    names: 'policy/config.json',
  },
  {
    name: "one blob's checksum deleted",
    state: (s) => delete (s.policy.sha256 as Record<string, string>)['optimizer.safetensors'],
    names: 'policy/optimizer.safetensors',
  },
  {
    name: 'blob changed, checksum not recomputed',
    blob: ['model.safetensors', setTensor('transformer.wte.weight', 1, 0.25)],
    rechecksum: false,
    names: 'policy/model.safetensors',
  },
  {
    name: 'blob cut mid-value',
    blob: ['optimizer.safetensors', (b) => b.subarray(0, b.length - 2)],
    names: 'policy/optimizer.safetensors',
  },
  {
    name: 'blob one value short',
    blob: ['model.safetensors', (b) => b.subarray(0, b.length - 4)],
    names: 'policy/model.safetensors',
  },
  {
    name: 'safetensors header claims more than the file',
    blob: [
      'model.safetensors',
      (b) => {
        const copy = b.slice();
        new DataView(copy.buffer).setBigUint64(0, BigInt(b.length), true);
        return copy;
      },
    ],
    names: 'policy/model.safetensors',
  },
  {
    name: 'config.json changed, checksum not recomputed',
    blob: [
      'config.json',
      (b) => new TextEncoder().encode(new TextDecoder().decode(b).replace('"n_layer": 1', '"n_layer": 2')),
    ],
    rechecksum: false,
    names: 'policy/config.json',
  },
  { name: 'blob deleted', removeBlob: 'optimizer.safetensors', names: 'policy/optimizer.safetensors' },
  {
    name: 'state.json not committed by its record',
    record: (d) => Object.assign(d, { key: 'checkpoints/step-00000099' }),
    names: 'state.json',
  },
  {
    name: 'byte order changed in state.json',
    state: (s) => Object.assign(s.policy.metadata as object, { byteOrder: 'big-endian float16' }),
    names: 'state.json',
  },
];

const SELECTOR_TAMPERING: Tampering[] = [
  {
    name: 'selector: NaN in a projection',
    blob: ['queryProjection.f32', setFloat(2, Number.NaN)],
    names: 'policy/queryProjection.f32',
  },
  {
    name: 'selector: negative second moment',
    blob: ['gate.v.f32', setFloat(0, -3)],
    names: 'policy/gate.v.f32',
  },
];

/** Writes `checkpoint` fresh into its own store folder, tampers it, and reads and loads it. */
async function tamperAndLoad(
  root: string,
  checkpoint: PolicyCheckpoint,
  tampering: Tampering | null,
  load: (c: PolicyCheckpoint) => Promise<void>,
): Promise<string> {
  const dir = join(root, `ckpt-${Math.random().toString(36).slice(2)}`);
  const store = createJsonlStore({ dir });
  const key = await writePolicyCheckpoint(store, 'run', 1, checkpoint, { step: 1 });
  const folder = join(dir, 'run', 'blobs', key);
  if (tampering) {
    const statePath = join(folder, 'state.json');
    const state = JSON.parse(await readFile(statePath, 'utf8'));
    if (tampering.blob) {
      const [name, change] = tampering.blob;
      const bytes = change(new Uint8Array(await readFile(join(folder, 'policy', name))));
      await writeFile(join(folder, 'policy', name), bytes);
      if (tampering.rechecksum !== false) state.policy.sha256[name] = sha256(bytes);
    }
    if (tampering.removeBlob) await rm(join(folder, 'policy', tampering.removeBlob));
    tampering.state?.(state);
    const stateBytes = new TextEncoder().encode(JSON.stringify(state));
    await writeFile(statePath, stateBytes);
    const recordsPath = join(dir, 'run', 'checkpoint.jsonl');
    const record = JSON.parse(await readFile(recordsPath, 'utf8'));
    if (tampering.rechecksum !== false) record.data.stateSha256 = sha256(stateBytes);
    tampering.record?.(record.data);
    await writeFile(recordsPath, `${JSON.stringify(record)}\n`);
  }
  return outcome(
    async () => load((await readPolicyCheckpoint(store, 'run', key)).checkpoint),
    tampering ? [join(folder, tampering.names)] : [],
  );
}

/** Sets float32 element `index` of an ONNX initializer (raw_data follows the name) to `value`. */
function setInitializer(model: Uint8Array, name: string, index: number, value: number): Uint8Array {
  const at = Buffer.from(model).indexOf(Buffer.from([...new TextEncoder().encode(name), 0x4a]));
  let i = at + name.length + 1;
  while (model[i]! >= 0x80) i++;
  const copy = model.slice();
  new DataView(copy.buffer).setFloat32(i + 1 + index * 4, value, true);
  return copy;
}

export async function tamperedCheckpoints(root: string) {
  const results: Record<string, string> = {};
  const policy = await createTfjsPolicy({
    model: { layers: 1, width: 16, heads: 2, contextLength: 32 },
    seed: 1,
    backend: 'wasm',
  });
  const saved = await policy.save();
  const load = (c: PolicyCheckpoint) => policy.load(c);
  const control: Record<string, string> = { tfjs: await tamperAndLoad(root, saved, null, load) };
  for (const t of TFJS_TAMPERING) results[t.name] = await tamperAndLoad(root, saved, t, load);
  policy.dispose();

  const selector = await createPointerSelector({ inputDimensions: 8, hiddenDimensions: 4, backend: 'cpu' });
  const selectorLoad = async (c: PolicyCheckpoint) => selector.load(c);
  control.selector = await tamperAndLoad(root, selector.save(), null, selectorLoad);
  for (const t of SELECTOR_TAMPERING)
    results[t.name] = await tamperAndLoad(root, selector.save(), t, selectorLoad);
  selector.dispose();

  const fixture = join(
    import.meta.dirname,
    '..',
    '..',
    'src',
    'adapters',
    'onnx',
    '__fixtures__',
    'tiny-gpt',
  );
  const onnx = async (change: ((m: Uint8Array) => Uint8Array) | null) => {
    const dir = join(root, `onnx-${Math.random().toString(36).slice(2)}`);
    await mkdir(dir, { recursive: true });
    for (const e of await readdir(fixture, { withFileTypes: true }))
      if (e.isFile()) await copyFile(join(fixture, e.name), join(dir, e.name));
    const model = join(dir, 'model.onnx');
    if (change) await writeFile(model, change(new Uint8Array(await readFile(model))));
    return outcome(
      async () => (await createOnnxPolicy({ modelDir: dir, intraOpThreads: 1 })).dispose(),
      change ? [model] : [],
    );
  };
  control.onnx = await onnx(null);
  results['onnx: NaN in the token embedding'] = await onnx((m) =>
    setInitializer(m, 'transformer.wte.weight', 5, Number.NaN),
  );
  results['onnx: +Infinity in a layer norm'] = await onnx((m) =>
    setInitializer(m, 'transformer.h.1.ln_2.weight', 0, Number.POSITIVE_INFINITY),
  );
  const values = Object.values(results);
  return {
    cases: values.length,
    refusedNamingTheFile: values.filter((v) => v === 'named').length,
    accepted: Object.keys(results).filter((k) => results[k] === 'accepted'),
    otherwise: Object.fromEntries(
      Object.entries(results).filter(([, v]) => v !== 'named' && v !== 'accepted'),
    ),
    untouchedLoaded: Object.values(control).filter((v) => v === 'accepted').length,
    untouched: Object.keys(control).length,
  };
}
