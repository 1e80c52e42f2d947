export { createSqliteSearchEngine, indexPages, indexPageFolder, type SqliteSearchEngine, type SqliteSearchSettings, type PageRecord, type IndexResult } from './sqlite-fts';
export { sqliteSearchSettingsSchema } from './settings';
