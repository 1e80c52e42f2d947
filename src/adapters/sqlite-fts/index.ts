import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/sqlite-fts needs libsql, sharp (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const sqliteFts = await loadWithOptionalPackages(
  'searcher-rl/sqlite-fts',
  [
    { name: 'libsql', install: 'npm install libsql@^0.5' },
    { name: 'sharp', install: 'npm install sharp@^0.34' },
  ],
  () => import('./sqlite-fts'),
);

/**
 * BM25 search (SQLite FTS5) over a page index; hits carry the basename, text, image and the score
 * `-bm25`.
 */
export const createSqliteSearchEngine = sqliteFts.createSqliteSearchEngine;
/**
 * Builds (or reuses, when the input is unchanged) a SQLite FTS5 index of page records at `dbPath`.
 */
export const indexPages = sqliteFts.indexPages;
/**
 * Indexes a folder of page images with their text beside them (`deck1_3.png` + `deck1_3.txt`), or
 * text-only pages.
 */
export const indexPageFolder = sqliteFts.indexPageFolder;
/**
 * Indexes a JSON Lines retrieval corpus (Search-R1's `{id, contents}`, DPR's `{id, title, text}`),
 * one passage a line.
 */
export const indexCorpusFile = sqliteFts.indexCorpusFile;
/** What a page index holds: its number of pages, and which of `basenames` it lacks. */
export const inspectPageIndex = sqliteFts.inspectPageIndex;
/**
 * Opens a page index read-only to read its pages by basename (text and image), e.g. a verifier's
 * golden pages.
 */
export const openPageReader = sqliteFts.openPageReader;
export type {
  SqliteSearchEngine,
  SqliteSearchSettings,
  PageRecord,
  IndexResult,
  IndexedPage,
  PageReader,
} from './sqlite-fts';
export { sqliteSearchSettingsSchema } from './settings';
