import { loadWithOptionalPackages } from '../../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/store/sqlite needs libsql (an optional peer dependency): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/store/sqlite', [{ name: 'libsql', install: 'npm install libsql@^0.5' }], () => import('./implementation'));

export const createSqliteStore = implementation.createSqliteStore;
export const importJsonlRuns = implementation.importJsonlRuns;
export type { SqliteStore, SqliteStoreSettings, PromptSuccessRow, NdcgJudgeRow } from './implementation';
