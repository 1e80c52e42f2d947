// Everything of this subpath that needs its optional packages; index.ts loads it, or says what to install.
export { createSqliteStore, type SqliteStore, type SqliteStoreSettings, type PromptSuccessRow, type NdcgJudgeRow } from './sqlite-store';
export { importJsonlRuns } from './import-jsonl';
