import { z } from 'zod';
import { ConfigValidationError } from '../../core/errors';
import { defineAdapter } from '../../provider-utils/adapter-definition';
import { sqliteSearchSettingsSchema } from './settings';

/**
 * `adapters.searchEngine: {type: 'sqlite-fts', dbPath, pagesDir | corpusPath}`: BM25 over a page
 * index, built first from a folder of pages or a JSONL corpus when one is named (libsql and sharp
 * are loaded by `create`).
 */
export const sqliteFtsAdapter = defineAdapter({
  port: 'searchEngine',
  type: 'sqlite-fts',
  settings: sqliteSearchSettingsSchema.extend({
    pagesDir: z
      .string()
      .min(1)
      .optional()
      .describe(
        'a folder of pages indexed into dbPath first: images with a .txt of their text beside each, or .txt files alone',
      ),
    corpusPath: z
      .string()
      .min(1)
      .optional()
      .describe(
        'a JSONL corpus indexed into dbPath first, one passage a line: {"id", "contents"} (Search-R1) or {"id", "title", "text"}; a passage is named by its id',
      ),
  }),
  packages: ['libsql', 'sharp'],
  // dbPath is read only where nothing is indexed into it first.
  inputPaths: [
    'pagesDir',
    'corpusPath',
    { key: 'dbPath', when: (s) => s.pagesDir === undefined && s.corpusPath === undefined },
  ],
  async create({ pagesDir, corpusPath, ...settings }, { field }) {
    if (pagesDir !== undefined && corpusPath !== undefined)
      throw new ConfigValidationError({
        issues: [
          {
            field: `${field}.corpusPath`,
            message: 'give pagesDir or corpusPath, not both (one index holds one corpus)',
          },
        ],
      });
    const fts = await import('./index');
    if (pagesDir !== undefined) await fts.indexPageFolder(settings.dbPath, pagesDir);
    if (corpusPath !== undefined) await fts.indexCorpusFile(settings.dbPath, corpusPath);
    return fts.createSqliteSearchEngine(settings);
  },
});
