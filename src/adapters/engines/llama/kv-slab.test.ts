import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { emptyKvCache, type KvCacheRow } from '../../../rollout-engine/kv-cache';
import { createKvSlabs } from './kv-slab';

const shape = { contextLength: 64, layers: 2, heads: 1, headWidth: 4 };
const row = (): KvCacheRow => ({ cached: 0, ...emptyKvCache(shape) });
const tick = () => new Promise((done) => setTimeout(done, 0));

describe('createKvSlabs', () => {
  it('keeps the slab while the same rows decode, and lets a replaced slab be collected', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const slabs = createKvSlabs(shape, 64);
    const rows = [row(), row()];
    let first: WeakRef<object> | null = null;
    // Made in a function of its own: no strong reference to the first slab outlives it.
    (() => {
      const a = slabs.slabFor(rows, 8);
      expect(slabs.slabFor(rows, 8)).toBe(a);
      first = new WeakRef(a);
    })();
    const b = slabs.slabFor([row()], 8);
    b.write('keys', 0, b.rows, new Float32Array(4), 1, [1]);
    await tick();
    gc();
    await tick();
    // A slab's closures once shared their scope with the slab before it, so every slab kept the last alive.
    expect(first!.deref()).toBeUndefined();
  });
});
