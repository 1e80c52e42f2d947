import { z } from 'zod';
import { defineAdapter } from '../../../provider-utils/adapter-definition';

/** `adapters.store: {type: 'sqlite', path}`: the Store on SQLite (libsql, loaded by `create`). */
export const sqliteStoreAdapter = defineAdapter({
  port: 'store',
  type: 'sqlite',
  settings: z
    .object({
      path: z
        .string()
        .min(1)
        .describe('The SQLite database file (runs, steps, episodes, turns, tool calls, rewards, verdicts).'),
    })
    .strict(),
  packages: ['libsql'],
  create: (settings) => import('./index').then((m) => m.createSqliteStore(settings)),
});
