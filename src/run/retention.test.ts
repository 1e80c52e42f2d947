import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../adapters/mock/memory-store';
import type { Store } from '../ports/store';
import { writePolicyCheckpoint } from './checkpoints';
import { applyRetention, describeRetention } from './retention';

const checkpoint = (size: number) => ({
  format: 'test.v1',
  metadata: {},
  blobs: { 'w.bin': new Uint8Array(size) },
});

async function run(store: Store, rewards: Array<number | null>): Promise<string[]> {
  const keys: string[] = [];
  for (let step = 0; step <= rewards.length; step++) {
    if (step > 0)
      await store.doAppend([
        { kind: 'metric', runId: 'r', step, time: step, data: { step, rewardMean: rewards[step - 1] } },
      ]);
    keys.push(await writePolicyCheckpoint(store, 'r', step, checkpoint(100)));
  }
  return keys;
}

const exists = async (store: Store, key: string) =>
  (await store.doGetBlob('r', `${key}/state.json`)) !== undefined;

describe('checkpoint retention', () => {
  it("keeps the last N and the best by the next step's metric, deleting the rest's files", async () => {
    const store = createMemoryStore();
    // Checkpoint s is scored by step s + 1: step-2's weights produced step 3's 0.9.
    const keys = await run(store, [0.1, 0.2, 0.9, 0.3, 0.4, 0.5]);
    const retention = await applyRetention(store, 'r', { keepLast: 2, keepBestBy: 'rewardMean' });
    expect(retention.kept.map((c) => [c.step, c.why, c.score])).toEqual([
      [2, ['best'], 0.9],
      [5, ['latest'], undefined],
      [6, ['latest'], undefined],
    ]);
    expect(retention.removed).toEqual([0, 1, 3, 4].map((s) => keys[s]));
    for (const [step, key] of keys.entries()) expect(await exists(store, key)).toBe([2, 5, 6].includes(step));
    expect(retention.bytes).toBe(retention.kept.reduce((n, c) => n + c.bytes, 0));
    expect(retention.kept[0]!.bytes).toBeGreaterThan(100);
    expect(describeRetention('phase1', retention, 'rewardMean')).toMatch(
      /^phase1 checkpoints: kept step-00000002 \(best rewardMean 0\.900\), step-00000005 \(latest\), step-00000006 \(latest\): 0\.\d MB; removed 4$/,
    );
    // Again: nothing more to delete; the latest is never deleted.
    expect(
      (await applyRetention(store, 'r', { keepLast: 1, keepBestBy: null })).kept.map((c) => c.step),
    ).toEqual([6]);
  });

  it('scores a step by its latest record (a resumed step), ignores missing rewards, ties to the later one', async () => {
    const store = createMemoryStore();
    await run(store, [0.5, null, 0.5]);
    // Step 1 was run again after a resume and scored higher.
    await store.doAppend([
      { kind: 'metric', runId: 'r', step: 1, time: 9, data: { step: 1, rewardMean: 0.7 } },
    ]);
    const retention = await applyRetention(store, 'r', { keepLast: 1, keepBestBy: 'rewardMean' });
    expect(retention.kept.map((c) => [c.step, c.score])).toEqual([
      [0, 0.7],
      [3, undefined],
    ]);
  });

  it('keeps every checkpoint with keepLast null, or when the store cannot delete', async () => {
    const store = createMemoryStore();
    await run(store, [0.1, 0.2]);
    expect((await applyRetention(store, 'r', { keepLast: null, keepBestBy: null })).kept).toHaveLength(3);
    const { doDeleteBlobs: _cannot, ...appendOnly } = createMemoryStore();
    await run(appendOnly, [0.1, 0.2]);
    const retention = await applyRetention(appendOnly, 'r', { keepLast: 1, keepBestBy: null });
    expect(retention.kept).toHaveLength(3);
    expect(retention.removed).toEqual([]);
  });
});
