/**
 * Tables of the SQLite store. `records` and `blobs` hold what the Store port holds, in append
 * order; the others are derived from trajectory, reward, metric and event records in the same
 * transaction, for SQL over runs: runs, steps, episodes, turns, tool calls, rewards, verdicts.
 */
export const SQLITE_STORE_SCHEMA = `
CREATE TABLE IF NOT EXISTS records (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, run_id TEXT NOT NULL, step INTEGER NOT NULL, prompt_uid TEXT, sample_id TEXT, rollout_index INTEGER, time REAL NOT NULL, data TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS records_by_run ON records (run_id, kind, step);
CREATE TABLE IF NOT EXISTS blobs (run_id TEXT NOT NULL, key TEXT NOT NULL, bytes BLOB NOT NULL, PRIMARY KEY (run_id, key));
CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, started REAL NOT NULL, last_step INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS steps (run_id TEXT NOT NULL, step INTEGER NOT NULL, time REAL NOT NULL, reward_mean REAL, success_rate REAL, ndcg_mean REAL, metrics TEXT NOT NULL, PRIMARY KEY (run_id, step));
CREATE TABLE IF NOT EXISTS episodes (run_id TEXT NOT NULL, step INTEGER NOT NULL, sample_id TEXT NOT NULL, prompt_uid TEXT NOT NULL, rollout_index INTEGER NOT NULL, query TEXT, reference TEXT, answer TEXT, terminated TEXT, judge_score REAL, ndcg REAL, reward REAL, searches INTEGER, crops INTEGER, text_length INTEGER, PRIMARY KEY (run_id, step, sample_id));
CREATE TABLE IF NOT EXISTS turns (run_id TEXT NOT NULL, step INTEGER NOT NULL, sample_id TEXT NOT NULL, turn_index INTEGER NOT NULL, think TEXT, action_type TEXT, invalid_reason TEXT, forced INTEGER NOT NULL, text TEXT, observation TEXT, PRIMARY KEY (run_id, step, sample_id, turn_index));
CREATE TABLE IF NOT EXISTS tool_calls (run_id TEXT NOT NULL, step INTEGER NOT NULL, sample_id TEXT NOT NULL, turn_index INTEGER NOT NULL, tool TEXT NOT NULL, query TEXT, basename TEXT, chosen_rank INTEGER, golden_ranks TEXT, hits TEXT, PRIMARY KEY (run_id, step, sample_id, turn_index));
CREATE TABLE IF NOT EXISTS rewards (run_id TEXT NOT NULL, step INTEGER NOT NULL, sample_id TEXT NOT NULL, prompt_uid TEXT, reward REAL, advantage REAL, status TEXT, judge_score REAL, ndcg REAL, format_passed INTEGER, cause TEXT, PRIMARY KEY (run_id, step, sample_id));
CREATE TABLE IF NOT EXISTS verdicts (run_id TEXT NOT NULL, prompt_uid TEXT NOT NULL, sample_id TEXT, reason TEXT, label TEXT NOT NULL, detail TEXT, PRIMARY KEY (run_id, prompt_uid));
`;
