import * as tf from '@tensorflow/tfjs';
import { afterAll } from 'vitest';
import { createTfjsPolicy, type TfjsPolicy } from '../policy';
import type { TfjsPolicySettings } from '../settings';

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

export { withTensorValue } from './safetensors-edit';
