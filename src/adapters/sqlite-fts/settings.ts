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
  })
  .strict();
