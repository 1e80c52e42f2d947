import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/sqlite-fts needs libsql, sharp (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/sqlite-fts', [{ name: "libsql", install: "npm install libsql@^0.5" }, { name: "sharp", install: "npm install sharp@^0.34" }], () => import('./implementation'));

export const createSqliteSearchEngine = implementation.createSqliteSearchEngine;
export const indexPages = implementation.indexPages;
export const indexPageFolder = implementation.indexPageFolder;
export { sqliteSearchSettingsSchema } from './settings';
export type { SqliteSearchEngine, SqliteSearchSettings, PageRecord, IndexResult } from './implementation';
