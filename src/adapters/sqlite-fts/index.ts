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

export const createSqliteSearchEngine = sqliteFts.createSqliteSearchEngine;
export const indexPages = sqliteFts.indexPages;
export const indexPageFolder = sqliteFts.indexPageFolder;
export const indexCorpusFile = sqliteFts.indexCorpusFile;
export const inspectPageIndex = sqliteFts.inspectPageIndex;
export type { SqliteSearchEngine, SqliteSearchSettings, PageRecord, IndexResult } from './sqlite-fts';
export { sqliteSearchSettingsSchema } from './settings';
