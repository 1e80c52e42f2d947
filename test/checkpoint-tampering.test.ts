import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { useTinyPolicies, withTensorValue } from '../src/adapters/tfjs/__fixtures__/tiny-policy';
import { createJsonlStore } from '../src/adapters/store/jsonl/index';
import { SearcherError } from '../src/core/errors';
import { readPolicyCheckpoint, writePolicyCheckpoint } from '../src/run/checkpoints';

// A real tfjs policy's checkpoint in a JSON Lines store, tampered on disk the way a bad disk, a
// bad copy or a hand edit would: NaN or Infinity in a blob (with every checksum recomputed, so
// only the values give it away), checksum fields deleted, blobs cut short. Each is refused with a
// typed error naming the file.

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});
const tiny = useTinyPolicies();

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

interface Tampering {
  blob?: { name: string; change: (bytes: Uint8Array) => Uint8Array };
  state?: (state: { policy: Record<string, unknown> } & Record<string, unknown>) => void;
  record?: (data: Record<string, unknown>) => void;
  /** Recompute the checksums after the change (default), as someone hiding it would. */
  rechecksum?: boolean;
}

async function savedCheckpoint() {
  const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-tamper-'));
  dirs.push(dir);
  const store = createJsonlStore({ dir });
  const policy = await tiny({ model: { layers: 1, width: 8, heads: 2, contextLength: 16 } });
  const key = await writePolicyCheckpoint(store, 'run', 2, await policy.save(), { step: 2 });
  const folder = join(dir, 'run', 'blobs', key);
  const tamper = async ({ blob, state, record, rechecksum = true }: Tampering) => {
    const statePath = join(folder, 'state.json');
    const saved = JSON.parse(await readFile(statePath, 'utf8'));
    if (blob) {
      const path = join(folder, 'policy', blob.name);
      const bytes = blob.change(new Uint8Array(await readFile(path)));
      await writeFile(path, bytes);
      if (rechecksum) saved.policy.sha256[blob.name] = sha256(bytes);
    }
    state?.(saved);
    const stateBytes = new TextEncoder().encode(JSON.stringify(saved));
    await writeFile(statePath, stateBytes);
    const recordsPath = join(dir, 'run', 'checkpoint.jsonl');
    const records = (await readFile(recordsPath, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    for (const r of records) {
      if (rechecksum) r.data.stateSha256 = sha256(stateBytes);
      record?.(r.data);
    }
    await writeFile(recordsPath, `${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
  };
  return { store, policy, key, folder, tamper };
}

/** Sets float32 element `index` of tensor `tensor` of a safetensors blob to `value`. */
const setFloat = (tensor: string, index: number, value: number) => (bytes: Uint8Array) =>
  withTensorValue(bytes, tensor, index, value);

async function refusal(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(SearcherError.isInstance(error), `expected a typed error, got ${String(error)}`).toBe(true);
  return error as Error;
}

describe('tampered checkpoints', () => {
  it('loads an untouched checkpoint', async () => {
    const { store, policy, key } = await savedCheckpoint();
    const read = await readPolicyCheckpoint(store, 'run', key);
    await expect(policy.load(read.checkpoint)).resolves.toBeUndefined();
  });

  it.each([
    ['model.safetensors', 'transformer.wte.weight', 0, Number.NaN, /NaN/],
    ['model.safetensors', 'transformer.h.0.attn.c_attn.weight', 100, Number.POSITIVE_INFINITY, /Infinity/],
    ['optimizer.safetensors', 'exp_avg.transformer.wpe.weight', 7, Number.NEGATIVE_INFINITY, /-Infinity/],
    ['optimizer.safetensors', 'exp_avg_sq.transformer.ln_f.weight', 3, Number.NaN, /NaN/],
  ])(
    'refuses %s holding a non-finite value (tensor %s, element %i) behind recomputed checksums, naming the file and tensor',
    async (name, tensor, index, value, what) => {
      const { store, folder, tamper } = await savedCheckpoint();
      await tamper({ blob: { name, change: setFloat(tensor, index, value) } });
      const error = await refusal(readPolicyCheckpoint(store, 'run', 'checkpoints/step-00000002'));
      expect(error.message).toContain(join(folder, 'policy', name));
      expect(error.message).toMatch(what);
      // The error says which tensor and element hold the value.
      expect(error.message).toContain(`tensor '${tensor}', element ${index}`);
    },
  );

  it('refuses a checkpoint whose record lost its state checksum, naming state.json', async () => {
    const { store, key, folder, tamper } = await savedCheckpoint();
    await tamper({ record: (data) => delete data.stateSha256 });
    const error = await refusal(readPolicyCheckpoint(store, 'run', key));
    expect(error.message).toContain(join(folder, 'state.json'));
    expect(error.message).toMatch(/checksum/);
  });

  it('refuses a checkpoint whose blob checksums were deleted from state.json, naming the blob', async () => {
    const { store, key, folder, tamper } = await savedCheckpoint();
    await tamper({ state: (state) => delete state.policy.sha256 });
    const all = await refusal(readPolicyCheckpoint(store, 'run', key));
    // The first blob of the Hugging Face folder: every file of it carries a checksum.
    expect(all.message).toContain(join(folder, 'policy', 'config.json'));
    expect(all.message).toMatch(/no checksum/);

    const one = await savedCheckpoint();
    await one.tamper({
      state: (state) => delete (state.policy.sha256 as Record<string, string>)['optimizer.safetensors'],
    });
    const error = await refusal(readPolicyCheckpoint(one.store, 'run', one.key));
    expect(error.message).toContain(join(one.folder, 'policy', 'optimizer.safetensors'));
    expect(error.message).toMatch(/no checksum/);
  });

  it('refuses a state.json that is not committed by a checkpoint record', async () => {
    const { store, key, folder, tamper } = await savedCheckpoint();
    await tamper({ record: (data) => Object.assign(data, { key: 'checkpoints/step-00000009' }) });
    const error = await refusal(readPolicyCheckpoint(store, 'run', key));
    expect(error.message).toContain(join(folder, 'state.json'));
  });

  it('refuses a changed blob whose checksum was not recomputed, naming the file', async () => {
    const { store, key, folder, tamper } = await savedCheckpoint();
    await tamper({
      blob: { name: 'model.safetensors', change: setFloat('transformer.wte.weight', 5, 0.5) },
      rechecksum: false,
    });
    const error = await refusal(readPolicyCheckpoint(store, 'run', key));
    expect(error.message).toContain(join(folder, 'policy', 'model.safetensors'));
    expect(error.message).toMatch(/checksum/);
  });

  it('refuses a truncated blob, naming the file: when reading, and when loaded without reading', async () => {
    const { store, key, folder, tamper, policy } = await savedCheckpoint();
    const intact = (await readPolicyCheckpoint(store, 'run', key)).checkpoint;
    // Cut mid-value and by whole values: safetensors' offsets must cover the data exactly.
    for (const cut of [3, 4]) {
      const one = await savedCheckpoint();
      await one.tamper({
        blob: { name: 'optimizer.safetensors', change: (b) => b.subarray(0, b.length - cut) },
      });
      const error = await refusal(readPolicyCheckpoint(one.store, 'run', one.key));
      expect(error.message).toContain(join(one.folder, 'policy', 'optimizer.safetensors'));
      expect(error.message).toMatch(/cut short/);
    }
    await tamper({ blob: { name: 'model.safetensors', change: (b) => b.subarray(0, b.length - 4) } });
    const bytes = new Uint8Array(await readFile(join(folder, 'policy', 'model.safetensors')));
    const loadError = await refusal(
      policy.load({
        ...intact,
        blobs: { ...intact.blobs, 'model.safetensors': bytes },
        source: {
          state: join(folder, 'state.json'),
          blobs: { 'model.safetensors': join(folder, 'policy', 'model.safetensors') },
        },
      }),
    );
    expect(loadError.message).toContain(join(folder, 'policy', 'model.safetensors'));
    expect(loadError.message).toMatch(/bytes/);
  });

  it('refuses a tampered state.json that is not JSON (checksums recomputed), naming it', async () => {
    const { store, key, folder } = await savedCheckpoint();
    const path = join(folder, 'state.json');
    const cut = (await readFile(path)).subarray(0, 40);
    await writeFile(path, cut);
    const recordsPath = join(folder, '..', '..', '..', 'checkpoint.jsonl');
    const record = JSON.parse(await readFile(recordsPath, 'utf8'));
    record.data.stateSha256 = sha256(cut);
    await writeFile(recordsPath, `${JSON.stringify(record)}\n`);
    const error = await refusal(readPolicyCheckpoint(store, 'run', key));
    expect(error.message).toContain(path);
    expect(error.message).toMatch(/not valid JSON/);
  });
});
