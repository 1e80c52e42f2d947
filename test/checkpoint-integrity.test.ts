import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createJsonlStore } from '../src/adapters/store/jsonl/index';
import { currentRecords } from '../src/core/store/records';
import { latestCheckpointKey, readPolicyCheckpoint, writePolicyCheckpoint } from '../src/run/checkpoints';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

const checkpoint = () => ({
  format: 'test.v1',
  metadata: { a: 1 },
  blobs: { 'weights.f32': new Uint8Array([1, 2, 3, 4]), 'adam-m.f32': new Uint8Array([5, 6, 7, 8]) },
});

describe('checkpoint integrity', () => {
  it('verifies the SHA-256 of every blob and of state.json on load, naming the file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-ckpt-'));
    dirs.push(dir);
    const store = createJsonlStore({ dir });
    const key = await writePolicyCheckpoint(store, 'run', 3, checkpoint(), { step: 3 });
    expect(await latestCheckpointKey(store, 'run')).toBe(key);
    expect((await readPolicyCheckpoint(store, 'run', key)).checkpoint.blobs['weights.f32']).toEqual(
      new Uint8Array([1, 2, 3, 4]),
    );
    const blob = join(dir, 'run', 'blobs', key, 'policy', 'weights.f32');
    await writeFile(blob, new Uint8Array([1, 2, 3, 9]));
    await expect(readPolicyCheckpoint(store, 'run', key)).rejects.toThrow(
      /run\/checkpoints\/step-00000003\/policy\/weights.f32.*checksum/,
    );
    await writeFile(blob, new Uint8Array([1, 2, 3, 4]));
    const state = join(dir, 'run', 'blobs', key, 'state.json');
    await writeFile(state, (await readFile(state, 'utf8')).replace('"step":3', '"step":4'));
    await expect(readPolicyCheckpoint(store, 'run', key)).rejects.toThrow(/state.json.*checksum/);
  });

  it('the records of the latest attempt: a resume event drops what the interrupted attempt left', () => {
    const record = (step: number, n: number) => ({
      kind: 'metric' as const,
      runId: 'r',
      step,
      time: n,
      data: { n },
    });
    const records = [record(1, 1), record(2, 2), record(1, 3), record(2, 4), record(2, 5), record(3, 6)];
    const events = [
      {
        kind: 'event' as const,
        runId: 'r',
        step: 0,
        time: 0,
        data: { type: 'resume', nextStep: 1, superseded: { metric: { 1: 1, 2: 1 } } },
      },
      {
        kind: 'event' as const,
        runId: 'r',
        step: 1,
        time: 0,
        data: { type: 'resume', nextStep: 2, superseded: { metric: { 2: 2 } } },
      },
    ];
    expect(currentRecords(records, events).map((r) => (r.data as { n: number }).n)).toEqual([3, 5, 6]);
    expect(currentRecords(records, [])).toHaveLength(6);
  });
});
