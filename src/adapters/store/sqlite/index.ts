import { loadWithOptionalPackages } from '../../../provider-utils/optional-package';

// searcher-rl/store/sqlite needs libsql (an optional peer dependency): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [sqliteStore, importJsonl] = await loadWithOptionalPackages(
  'searcher-rl/store/sqlite',
  [{ name: 'libsql', install: 'npm install libsql@^0.5' }],
  () => Promise.all([import('./sqlite-store'), import('./import-jsonl')]),
);

/**
 * The Store port over SQLite (libsql): one transaction per append, with derived tables to query and
 * read-only SQL.
 */
export const createSqliteStore = sqliteStore.createSqliteStore;
/**
 * Copies a folder's JSONL run logs into another store, run by run, in append order; returns the
 * records copied per run.
 */
export const importJsonlRuns = importJsonl.importJsonlRuns;
export type { SqliteStore, SqliteStoreSettings, PromptSuccessRow, NdcgJudgeRow } from './sqlite-store';
