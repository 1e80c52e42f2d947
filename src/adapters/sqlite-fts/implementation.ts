// Everything of this subpath that needs its optional packages; index.ts loads it, or says what to install.
export { createSqliteSearchEngine, indexPages, indexPageFolder, type SqliteSearchEngine, type SqliteSearchSettings, type PageRecord, type IndexResult } from './sqlite-fts';
export { sqliteSearchSettingsSchema } from './settings';
