import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { InvalidArgumentError, PortOutputError, ProviderCallError } from '../../../core/errors';
import { checkBlobKey, checkRunId, checkStoreQuery, checkStoreRecords } from '../../../core/store/records';
import { redactStoreRecord } from '../../../core/secrets';
import { encodeSpecialNumbers, reviveSpecialNumbers } from '../../../core/trajectory/serialize';
import type { Trajectory } from '../../../core/trajectory/trajectory';
import type { Store, StoreRecord } from '../../../ports/store';
import { scanSql } from '../../../provider-utils/sql-text';
import { openSqlite, type SqliteLocation } from '../../../provider-utils/sqlite';
import { SQLITE_STORE_SCHEMA } from './schema';

/** Settings of `createSqliteStore`. */
export interface SqliteStoreSettings {
  /** The database file (created with its folder); ':memory:' for a throwaway one. */
  path: string;
}

/** One prompt's rollouts and successes (`SqliteStore.successRatePerPrompt`). */
export interface PromptSuccessRow {
  promptUid: string;
  rollouts: number;
  successes: number;
  successRate: number;
  meanNdcg: number | null;
  meanJudge: number | null;
}

/** One episode's NDCG and judge score side by side (`SqliteStore.ndcgVsJudge`). */
export interface NdcgJudgeRow {
  step: number;
  sampleId: string;
  promptUid: string;
  ndcg: number | null;
  judgeScore: number | null;
}

/** The Store port over SQLite, with the derived tables and the queries curation asks. */
export interface SqliteStore extends Store {
  /** Success rate per prompt (a success: judge score >= `successAt`, default 1). */
  successRatePerPrompt(runId: string, successAt?: number): PromptSuccessRow[];
  /** NDCG and judge score of every episode of a run. */
  ndcgVsJudge(runId: string): NdcgJudgeRow[];
  /**
   * Any read-only SQL over the tables (see schema.ts): one statement that returns rows, run on a
   * read-only connection, so that a statement that would write is an InvalidArgumentError.
   */
  sql<T = Record<string, unknown>>(query: string, ...params: unknown[]): T[];
  /** Checkpoints the write-ahead log into the database file and closes both connections. */
  close(): Promise<void>;
}

/** PRAGMAs that read with an argument (a table, an index, an error count); any other given a value sets it. */
const READING_PRAGMAS = new Set([
  'table_info',
  'table_xinfo',
  'table_list',
  'index_info',
  'index_xinfo',
  'index_list',
  'foreign_key_list',
  'foreign_key_check',
  'integrity_check',
  'quick_check',
]);

/**
 * Whether `query` is a PRAGMA that changes its connection or writes. A PRAGMA takes effect as it
 * is prepared (`query_only = OFF`, `locking_mode = EXCLUSIVE`), before the statement could be
 * refused; EXPLAIN prepares it too.
 */
function isSettingPragma(query: string): boolean {
  let head = scanSql(query).head;
  if (head[0] === 'explain') head = head[1] === 'query' && head[2] === 'plan' ? head.slice(3) : head.slice(1);
  if (head[0] !== 'pragma') return false;
  const [name, next] = head[2] === '.' ? [head[3], head[4]] : [head[1], head[2]];
  if (next === '=' || next === '(') return !READING_PRAGMAS.has(name ?? '');
  return name === 'wal_checkpoint';
}

/**
 * SQLite store (libsql). Each `doAppend` is one transaction: every record of the batch and
 * the rows derived from it are written, or none. The database is in WAL mode with synchronous
 * NORMAL, so a run that is killed keeps every batch it had committed. `sql()` runs on a second
 * connection, opened read-only and with `query_only` on: it cannot write, whatever it is given.
 */
export function createSqliteStore(settings: SqliteStoreSettings): SqliteStore {
  if (typeof settings?.path !== 'string' || settings.path.length === 0)
    throw new InvalidArgumentError({ argument: 'path', message: 'must be a database file path' });
  const path = settings.path === ':memory:' ? ':memory:' : resolve(settings.path);
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  // ':memory:' is one database per store, which the read-only connection must share.
  const location: SqliteLocation = path === ':memory:' ? { sharedMemory: randomUUID() } : { file: path };
  const db = openSqlite(location);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(SQLITE_STORE_SCHEMA);
  const reader = openSqlite(location, { readonly: true });
  reader.exec('PRAGMA query_only = ON');
  const readOnlyOnly = (cause?: unknown) =>
    new InvalidArgumentError({ argument: 'query', message: 'only read-only SQL (SELECT) is allowed', cause });
  const fail = (message: string, cause: unknown) =>
    new ProviderCallError({ port: 'store', provider: 'sqlite', message, isRetryable: false, cause });

  const insertRecord = db.prepare(
    'INSERT INTO records (kind, run_id, step, prompt_uid, sample_id, rollout_index, time, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  const upsertRun = db.prepare(
    'INSERT INTO runs (run_id, started, last_step) VALUES (?, ?, ?) ON CONFLICT(run_id) DO UPDATE SET last_step = max(last_step, excluded.last_step)',
  );
  // The derived tables, one row per key: a placeholder for each column.
  const replaceInto = (table: string, columns: string) => {
    const placeholders = columns.split(', ').map(() => '?');
    return db.prepare(`INSERT OR REPLACE INTO ${table} (${columns}) VALUES (${placeholders.join(', ')})`);
  };
  const upsertStep = replaceInto(
    'steps',
    'run_id, step, time, reward_mean, success_rate, ndcg_mean, metrics',
  );
  const upsertEpisode = replaceInto(
    'episodes',
    'run_id, step, sample_id, prompt_uid, rollout_index, query, reference, answer, terminated, judge_score, ndcg, reward, searches, crops, text_length',
  );
  const upsertTurn = replaceInto(
    'turns',
    'run_id, step, sample_id, turn_index, think, action_type, invalid_reason, forced, text, observation',
  );
  const upsertTool = replaceInto(
    'tool_calls',
    'run_id, step, sample_id, turn_index, tool, query, basename, chosen_rank, golden_ranks, hits',
  );
  const upsertReward = replaceInto(
    'rewards',
    'run_id, step, sample_id, prompt_uid, reward, advantage, status, judge_score, ndcg, format_passed, cause',
  );
  const upsertVerdict = replaceInto('verdicts', 'run_id, prompt_uid, sample_id, reason, label, detail');
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

  const derive = (record: StoreRecord) => {
    upsertRun.run(record.runId, record.time, record.step);
    const { runId, step } = record;
    if (record.kind === 'metric') {
      const m = record.data as { rewardMean?: unknown; successRate?: unknown; ndcgMean?: unknown };
      upsertStep.run(
        runId,
        step,
        record.time,
        num(m?.rewardMean),
        num(m?.successRate),
        num(m?.ndcgMean),
        JSON.stringify(record.data, encodeSpecialNumbers),
      );
    } else if (record.kind === 'trajectory') {
      const t = record.data as Trajectory;
      if (!t || !Array.isArray(t.turns)) return;
      const c = t.rewardDetail?.components;
      upsertEpisode.run(
        runId,
        step,
        t.sampleId,
        t.promptUid,
        t.rolloutIndex,
        t.query,
        t.reference,
        t.finalAnswer,
        t.terminated,
        num(c?.judgeScore),
        num(c?.ndcg),
        num(t.reward),
        t.turns.filter((x) => x.action?.type === 'search').length,
        t.turns.filter((x) => x.crop).length,
        t.turns.reduce((n, x) => n + x.text.length, 0),
      );
      for (const turn of t.turns) {
        upsertTurn.run(
          runId,
          step,
          t.sampleId,
          turn.index,
          turn.think,
          turn.action?.type ?? null,
          turn.invalid?.reason ?? null,
          turn.forced ? 1 : 0,
          turn.text,
          turn.observation,
        );
        if (turn.search)
          upsertTool.run(
            runId,
            step,
            t.sampleId,
            turn.index,
            'search',
            turn.search.query,
            turn.search.chosenBasename,
            turn.search.chosenRank,
            JSON.stringify(turn.search.goldenRanks),
            JSON.stringify(turn.search.hitBasenames),
          );
        else if (turn.crop)
          upsertTool.run(
            runId,
            step,
            t.sampleId,
            turn.index,
            'bbox',
            null,
            turn.crop.basename,
            null,
            null,
            JSON.stringify(turn.crop.bbox),
          );
      }
    } else if (record.kind === 'reward' && record.sampleId) {
      const r = record.data as {
        reward?: unknown;
        advantage?: unknown;
        detail?: {
          status?: string;
          components?: { judgeScore?: unknown; ndcg?: unknown; formatPassed?: unknown };
          cause?: unknown;
        } | null;
      };
      const c = r?.detail?.components;
      upsertReward.run(
        runId,
        step,
        record.sampleId,
        record.promptUid ?? null,
        num(r?.reward),
        num(r?.advantage),
        r?.detail?.status ?? null,
        num(c?.judgeScore),
        num(c?.ndcg),
        typeof c?.formatPassed === 'boolean' ? Number(c.formatPassed) : null,
        r?.detail?.cause ? JSON.stringify(r.detail.cause) : null,
      );
    } else if (record.kind === 'event') {
      const e = record.data as {
        type?: string;
        promptUid?: string;
        sampleId?: string;
        reason?: string;
        label?: string;
        detail?: unknown;
      };
      if (e?.type === 'verdict' && typeof e.promptUid === 'string' && typeof e.label === 'string')
        upsertVerdict.run(
          runId,
          e.promptUid,
          e.sampleId ?? null,
          e.reason ?? null,
          e.label,
          JSON.stringify(e.detail ?? null),
        );
    }
  };

  const appendAll = db.transaction((rows: Array<{ record: StoreRecord; json: string }>) => {
    for (const { record, json } of rows) {
      insertRecord.run(
        record.kind,
        record.runId,
        record.step,
        record.promptUid ?? null,
        record.sampleId ?? null,
        record.rolloutIndex ?? null,
        record.time,
        json,
      );
      derive(record);
    }
  });

  return {
    specificationVersion: 'v1',
    provider: 'sqlite',
    async doAppend(given) {
      checkStoreRecords(given);
      // No configured secret is written, in the records or the tables derived from them.
      const records = given.map(redactStoreRecord);
      const rows = records.map((record, i) => {
        try {
          return { record, json: JSON.stringify(record.data, encodeSpecialNumbers) ?? 'null' };
        } catch (error) {
          throw new InvalidArgumentError({
            argument: `records[${i}].data`,
            message: `cannot be written as JSON: ${(error as Error).message}`,
            cause: error,
          });
        }
      });
      try {
        appendAll(rows);
      } catch (error) {
        throw fail(
          `could not append ${records.length} record(s) to ${path}: ${(error as Error).message}`,
          error,
        );
      }
    },
    async doQuery(query) {
      checkStoreQuery(query);
      if (query.limit === 0) return [];
      const where = ['kind = ?', 'run_id = ?'];
      const params: unknown[] = [query.kind, query.runId];
      if (query.step !== undefined) where.push('step = ?'), params.push(query.step);
      if (query.promptUid !== undefined) where.push('prompt_uid = ?'), params.push(query.promptUid);
      if (query.sampleId !== undefined) where.push('sample_id = ?'), params.push(query.sampleId);
      const limit = query.limit === undefined ? '' : ` LIMIT ${query.limit}`;
      const rows = db
        .prepare(`SELECT * FROM records WHERE ${where.join(' AND ')} ORDER BY id${limit}`)
        .all(...params) as Array<{
        kind: StoreRecord['kind'];
        run_id: string;
        step: number;
        prompt_uid: string | null;
        sample_id: string | null;
        rollout_index: number | null;
        time: number;
        data: string;
      }>;
      return rows.map((row) => {
        let data: unknown;
        try {
          data = JSON.parse(row.data, reviveSpecialNumbers);
        } catch (error) {
          throw new PortOutputError({
            port: 'store',
            provider: 'sqlite',
            field: 'records.data',
            message: `a ${row.kind} record of run '${row.run_id}' is not valid JSON`,
            cause: error,
          });
        }
        return {
          kind: row.kind,
          runId: row.run_id,
          step: row.step,
          ...(row.prompt_uid !== null && { promptUid: row.prompt_uid }),
          ...(row.sample_id !== null && { sampleId: row.sample_id }),
          ...(row.rollout_index !== null && { rolloutIndex: row.rollout_index }),
          time: row.time,
          data,
        };
      });
    },
    async doPutBlob(runId, key, bytes) {
      checkRunId(runId);
      checkBlobKey(key);
      db.prepare('INSERT OR REPLACE INTO blobs (run_id, key, bytes) VALUES (?, ?, ?)').run(
        runId,
        key,
        Buffer.from(bytes),
      );
    },
    async doDeleteBlobs(runId, keyPrefix) {
      checkRunId(runId);
      checkBlobKey(keyPrefix);
      db.prepare('DELETE FROM blobs WHERE run_id = ? AND (key = ? OR substr(key, 1, ?) = ?)').run(
        runId,
        keyPrefix,
        keyPrefix.length + 1,
        `${keyPrefix}/`,
      );
    },
    async doGetBlob(runId, key) {
      checkRunId(runId);
      checkBlobKey(key);
      const row = db.prepare('SELECT bytes FROM blobs WHERE run_id = ? AND key = ?').get(runId, key) as
        | { bytes: Buffer }
        | undefined;
      return row ? new Uint8Array(row.bytes) : undefined;
    },
    successRatePerPrompt(runId, successAt = 1) {
      checkRunId(runId);
      return db
        .prepare(
          'SELECT prompt_uid AS promptUid, count(*) AS rollouts, sum(CASE WHEN judge_score >= ? THEN 1 ELSE 0 END) AS successes, avg(ndcg) AS meanNdcg, avg(judge_score) AS meanJudge FROM episodes WHERE run_id = ? GROUP BY prompt_uid ORDER BY prompt_uid',
        )
        .all(successAt, runId)
        .map((row) => {
          const r = row as Omit<PromptSuccessRow, 'successRate'>;
          return { ...r, successRate: r.rollouts === 0 ? 0 : r.successes / r.rollouts };
        });
    },
    ndcgVsJudge(runId) {
      checkRunId(runId);
      return db
        .prepare(
          'SELECT step, sample_id AS sampleId, prompt_uid AS promptUid, ndcg, judge_score AS judgeScore FROM episodes WHERE run_id = ? ORDER BY step, sample_id',
        )
        .all(runId) as NdcgJudgeRow[];
    },
    sql(query, ...params) {
      if (typeof query === 'string' && isSettingPragma(query)) throw readOnlyOnly();
      reader.exec('PRAGMA query_only = ON');
      let statement;
      try {
        statement = reader.prepare(query);
      } catch (error) {
        // More than one statement (a write hidden after a SELECT) or none.
        if (error instanceof RangeError)
          throw new InvalidArgumentError({
            argument: 'query',
            message: `must be one SQL statement: ${error.message}`,
            cause: error,
          });
        throw error;
      }
      // A statement that returns no rows (ATTACH, DELETE, BEGIN) is refused before it runs;
      // one that does and would write (INSERT ... RETURNING) fails on the read-only connection.
      if (!statement.reader) throw readOnlyOnly();
      try {
        return statement.all(...params) as never;
      } catch (error) {
        if (/^SQLITE_READONLY/.test(String((error as { code?: unknown })?.code))) throw readOnlyOnly(error);
        throw error;
      }
    },
    async close() {
      reader.close();
      // Everything into the database file itself, and the WAL emptied: a closed store is one file
      // that can be copied or moved alone (libsql's close leaves the -wal file in place).
      if (db.open) {
        db.pragma('wal_checkpoint(TRUNCATE)');
        db.close();
      }
    },
  };
}
