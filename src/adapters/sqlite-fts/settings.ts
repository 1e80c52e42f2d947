import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

// Apart from the adapter so that a configuration can name it without loading libsql.
/**
 * The SQLite FTS search engine's settings as a zod schema: the index file, and whether hits carry
 * images and how much text.
 */
export const sqliteSearchSettingsSchema = z
  .object({
    /** The index file made by `indexPages` or `indexPageFolder`. */
    dbPath: z.string().min(1),
    /** Return page images with the hits (read from disk per hit). */
    includeImages: z.boolean().default(true),
    /** Characters of page text returned per hit (`null`: all). */
    maxTextChars: positiveInt().nullable().default(null),
    /**
     * Queries whose hits are kept, most recently used first (0: none). The index is read-only
     * while the engine is open, so a repeated query (a group's rollouts, the baselines' shared
     * first search, an evaluation after another) is answered from memory with the same hits.
     */
    queryCache: z.number().int().min(0).default(4096),
    /** Bytes of page images kept in memory (0: read from disk at each hit). */
    imageCacheBytes: z
      .number()
      .int()
      .min(0)
      .default(64 * 1024 * 1024),
  })
  .strict();
