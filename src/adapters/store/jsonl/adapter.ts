import { z } from 'zod';
import { defineAdapter } from '../../../provider-utils/adapter-definition';

/** `adapters.store: {type: 'jsonl', dir}`: one JSON Lines file per record kind in a folder. */
export const jsonlStoreAdapter = defineAdapter({
  port: 'store',
  type: 'jsonl',
  settings: z.object({ dir: z.string().min(1) }).strict(),
  packages: [],
  create: (settings) => import('./index').then((m) => m.createJsonlStore(settings)),
});
