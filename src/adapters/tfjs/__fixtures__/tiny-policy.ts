import * as tf from '@tensorflow/tfjs';
import { afterAll } from 'vitest';
import { createTfjsPolicy, type TfjsPolicy } from '../policy';
import type { TfjsPolicySettings } from '../settings';
import { decodeSafetensors } from '../../../provider-utils/safetensors';

export const TINY: TfjsPolicySettings = { model: { layers: 2, width: 16, heads: 2, contextLength: 96 }, seed: 5, backend: 'wasm' };

/** For a test file: tiny policies on wasm (overrides merged into TINY), disposed after the file's tests. */
export function useTinyPolicies(): (overrides?: TfjsPolicySettings, options?: Parameters<typeof createTfjsPolicy>[1]) => Promise<TfjsPolicy> {
  const created: TfjsPolicy[] = [];
  afterAll(async () => {
    for (const p of created) p.dispose();
    await tf.setBackend('wasm');
  });
  return async (overrides = {}, options) => {
    const policy = await createTfjsPolicy({ ...TINY, ...overrides }, options);
    created.push(policy);
    return policy;
  };
}

/** Checkpoint blob bytes with float32 element `index` of tensor `tensor` (a safetensors file) set to `value`. */
export function withTensorValue(bytes: Uint8Array, tensor: string, index: number, value: number): Uint8Array {
  const copy = bytes.slice();
  const found = decodeSafetensors(copy, { argument: 'test' }).tensors.get(tensor);
  if (!found) throw new Error(`no tensor '${tensor}'`);
  new DataView(found.bytes.buffer, found.bytes.byteOffset, found.bytes.byteLength).setFloat32(index * 4, value, true);
  return copy;
}
