import { mkdtemp, readdir, readFile, appendFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { registerSecret } from '../../core/secrets';
import type { Store, StoreRecord } from '../../ports/store';
import { createMemoryStore } from '../mock/index';
import { createJsonlStore } from './jsonl/index';
import { createSqliteStore } from './sqlite/index';

const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});
async function tempDir() {
  const dir = await mkdtemp(join(tmpdir(), 'searcher-rl-store-'));
  dirs.push(dir);
  return dir;
}

const record = (step: number, promptUid: string, data: unknown = { step }): StoreRecord => ({
  kind: 'trajectory',
  runId: 'run-1',
  step,
  promptUid,
  sampleId: `${promptUid}#0`,
  time: 1700000000000 + step,
  data,
});

const stores: Array<[string, () => Promise<Store>]> = [
  ['memory', async () => createMemoryStore()],
  ['jsonl', async () => createJsonlStore({ dir: await tempDir() })],
  ['sqlite', async () => createSqliteStore({ path: join(await tempDir(), 'runs.db') })],
];

describe.each(stores)('%s store', (_name, make) => {
  it('writes no configured secret: every string of a record is redacted, in the records and the derived tables', async () => {
    const key = `sk-store-${_name}-canary-7a6b5c4d3e2f1a0b`;
    registerSecret(key);
    const store = await make();
    const trajectory = {
      sampleId: 'a#0',
      promptUid: 'a',
      rolloutIndex: 0,
      reference: 'r',
      terminated: 'complete',
      reward: 1,
      query: `q ${key}`,
      finalAnswer: `the key is ${key}`,
      turns: [{ index: 0, text: 't', observation: `page ${key.slice(0, 12)}`, forced: false, think: null }],
      rewardDetail: null,
    };
    await store.doAppend([record(0, 'a', trajectory)]);
    const [read] = await store.doQuery({ kind: 'trajectory', runId: 'run-1' });
    expect(read!.data).toMatchObject({
      query: 'q [redacted]',
      finalAnswer: 'the key is [redacted]',
      turns: [{ observation: 'page [redacted]' }],
    });
    expect(JSON.stringify(read)).not.toContain(key.slice(0, 8));
    for (const dir of dirs)
      for (const file of await readdir(dir, { recursive: true })) {
        const bytes = await readFile(join(dir, file)).catch(() => null);
        if (bytes) expect(bytes.includes(key.slice(0, 8)), file).toBe(false);
      }
  });

  it('appends and queries by run, step, prompt and sample, in order', async () => {
    const store = await make();
    await store.doAppend([record(0, 'a'), record(0, 'b'), record(1, 'a')]);
    await store.doAppend([record(2, 'a', { nested: { x: [1, 2] } })]);
    expect((await store.doQuery({ kind: 'trajectory', runId: 'run-1' })).map((r) => r.step)).toEqual([
      0, 0, 1, 2,
    ]);
    expect(
      (await store.doQuery({ kind: 'trajectory', runId: 'run-1', step: 0 })).map((r) => r.promptUid),
    ).toEqual(['a', 'b']);
    expect(
      (await store.doQuery({ kind: 'trajectory', runId: 'run-1', promptUid: 'a', limit: 2 })).map(
        (r) => r.step,
      ),
    ).toEqual([0, 1]);
    expect(
      (await store.doQuery({ kind: 'trajectory', runId: 'run-1', sampleId: 'b#0' })).map((r) => r.step),
    ).toEqual([0]);
    expect(await store.doQuery({ kind: 'reward', runId: 'run-1' })).toEqual([]);
    expect((await store.doQuery({ kind: 'trajectory', runId: 'run-1', step: 2 }))[0]!.data).toEqual({
      nested: { x: [1, 2] },
    });
  });

  it('rejects a bad limit and unserialisable data naming them', async () => {
    const store = await make();
    await expect(store.doQuery({ kind: 'trajectory', runId: 'run-1', limit: -1 })).rejects.toThrow(
      /query\.limit/,
    );
    await store.doAppend([record(0, 'a'), record(1, 'a')]);
    expect(await store.doQuery({ kind: 'trajectory', runId: 'run-1', limit: 0 })).toEqual([]);
    if (store.provider !== 'memory')
      await expect(store.doAppend([record(2, 'a', { big: 10n })])).rejects.toThrow(/records\[0\]\.data/);
  });

  it('validates a whole batch before writing any of it', async () => {
    const store = await make();
    await expect(store.doAppend([record(0, 'a'), { ...record(1, 'b'), step: -1 }])).rejects.toThrow(
      /records\[1\]\.step/,
    );
    await expect(store.doAppend([{ ...record(0, 'a'), runId: '../escape' }])).rejects.toThrow(
      /records\[0\]\.runId/,
    );
    expect(await store.doQuery({ kind: 'trajectory', runId: 'run-1' })).toEqual([]);
  });

  it('keeps blobs, and refuses keys that leave the run', async () => {
    const store = await make();
    await store.doPutBlob('run-1', 'checkpoints/step-1/weights.bin', new Uint8Array([1, 2, 3]));
    expect(Array.from((await store.doGetBlob('run-1', 'checkpoints/step-1/weights.bin'))!)).toEqual([
      1, 2, 3,
    ]);
    expect(await store.doGetBlob('run-1', 'missing.bin')).toBeUndefined();
    await expect(store.doPutBlob('run-1', '../../etc/x', new Uint8Array())).rejects.toThrow(/'key'/);
  });

  it("deletes a checkpoint's blobs by folder, and nothing beside it", async () => {
    const store = await make();
    const put = (runId: string, key: string) => store.doPutBlob(runId, key, new Uint8Array([1]));
    await put('run-1', 'checkpoints/step-1/policy/model.safetensors');
    await put('run-1', 'checkpoints/step-1/state.json');
    await put('run-1', 'checkpoints/step-10/state.json');
    await put('run-2', 'checkpoints/step-1/state.json');
    await store.doDeleteBlobs!('run-1', 'checkpoints/step-1');
    await store.doDeleteBlobs!('run-1', 'checkpoints/step-7');
    expect(await store.doGetBlob('run-1', 'checkpoints/step-1/policy/model.safetensors')).toBeUndefined();
    expect(await store.doGetBlob('run-1', 'checkpoints/step-1/state.json')).toBeUndefined();
    expect(await store.doGetBlob('run-1', 'checkpoints/step-10/state.json')).toBeDefined();
    expect(await store.doGetBlob('run-2', 'checkpoints/step-1/state.json')).toBeDefined();
    await expect(store.doDeleteBlobs!('run-1', '../run-2')).rejects.toThrow(/'key'/);
  });
});

describe('jsonl store files', () => {
  it('writes one JSON line per record and survives a partial last line', async () => {
    const dir = await tempDir();
    const store = createJsonlStore({ dir });
    await store.doAppend([record(0, 'a', { logProb: Number.NEGATIVE_INFINITY })]);
    const path = join(dir, 'run-1', 'trajectory.jsonl');
    const text = await readFile(path, 'utf8');
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(text).data.logProb).toEqual({ $number: '-Infinity' });
    expect((await store.doQuery({ kind: 'trajectory', runId: 'run-1' }))[0]!.data).toEqual({
      logProb: Number.NEGATIVE_INFINITY,
    });
    await appendFile(path, '{"kind":"trajectory","runId":"ru');
    expect(await store.doQuery({ kind: 'trajectory', runId: 'run-1' })).toHaveLength(1);
    // After a restart, the first append cuts the torn line instead of gluing a record onto it.
    const restarted = createJsonlStore({ dir });
    await restarted.doAppend([record(1, 'b')]);
    expect((await restarted.doQuery({ kind: 'trajectory', runId: 'run-1' })).map((r) => r.step)).toEqual([
      0, 1,
    ]);
  });

  it('names the row of a malformed line', async () => {
    const dir = await tempDir();
    const store = createJsonlStore({ dir });
    await store.doAppend([record(0, 'a')]);
    await appendFile(join(dir, 'run-1', 'trajectory.jsonl'), 'not json\n');
    await expect(store.doQuery({ kind: 'trajectory', runId: 'run-1' })).rejects.toMatchObject({
      row: 1,
      field: '(json)',
    });
  });

  it('never interleaves concurrent appends', async () => {
    const dir = await tempDir();
    const store = createJsonlStore({ dir });
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.doAppend([record(i, `p${i}`, { text: 'x'.repeat(5000) })])),
    );
    const rows = await store.doQuery({ kind: 'trajectory', runId: 'run-1' });
    expect(rows).toHaveLength(50);
    expect(new Set(rows.map((r) => r.step)).size).toBe(50);
  });
});
