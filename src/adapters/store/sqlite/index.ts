import { loadWithOptionalPackages } from '../../../provider-utils/optional-package';

// searcher-rl/store/sqlite needs libsql (an optional peer dependency): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [sqliteStore, importJsonl] = await loadWithOptionalPackages(
  'searcher-rl/store/sqlite',
  [{ name: 'libsql', install: 'npm install libsql@^0.5' }],
  () => Promise.all([import('./sqlite-store'), import('./import-jsonl')]),
);

export const createSqliteStore = sqliteStore.createSqliteStore;
export const importJsonlRuns = importJsonl.importJsonlRuns;
export type { SqliteStore, SqliteStoreSettings, PromptSuccessRow, NdcgJudgeRow } from './sqlite-store';
