export { createSqliteStore, type SqliteStore, type SqliteStoreSettings, type PromptSuccessRow, type NdcgJudgeRow } from './sqlite-store';
export { importJsonlRuns } from './import-jsonl';
