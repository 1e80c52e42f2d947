import { existsSync } from 'node:fs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../../core/errors';
import type { Trajectory } from '../../../core/trajectory/trajectory';
import type { StoreRecord } from '../../../ports/store';
import { createJsonlStore } from '../jsonl/index';
import { createSqliteStore, importJsonlRuns } from './index';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sqlite-store-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const trajectory = (promptUid: string, rollout: number, judgeScore: number, ndcg: number): Trajectory =>
  ({
    formatVersion: 1,
    sampleId: `s1-b0-${promptUid}#${rollout}`,
    groupId: `s1-b0-${promptUid}`,
    promptUid,
    rolloutIndex: rollout,
    query: `question ${promptUid}`,
    reference: 'ref',
    goldenBasenames: ['d_1.png'],
    promptLength: 3,
    tokenSteps: [],
    generatedText: '',
    finalAnswer: 'ans',
    fullInputIds: [],
    generatedPositions: [],
    lossMask: [],
    retrievedBasenames: ['d_1.png'],
    evidence: [],
    terminated: 'complete',
    error: null,
    invalidActions: 0,
    generatorUsage: null,
    turns: [
      {
        index: 0,
        text: '<think>t</think><search>q</search>',
        forced: false,
        think: 't',
        action: { type: 'search', query: 'q' },
        invalid: null,
        ignoredActions: [],
        observation: 'obs',
        search: {
          query: 'q',
          hitBasenames: ['d_1.png'],
          chosenBasename: 'd_1.png',
          chosenRank: 1,
          goldenRanks: [1],
        },
      },
      {
        index: 1,
        text: '<search_complete>true</search_complete>',
        forced: false,
        think: null,
        action: { type: 'search_complete' },
        invalid: null,
        ignoredActions: [],
        observation: '',
      },
    ],
    reward: judgeScore,
    rewardDetail: {
      status: 'ok',
      value: judgeScore,
      components: { formatPassed: true, judgeScore, ndcg },
      weights: { judge: 1, ndcg: 0, format: 0 },
    },
    advantage: 0,
  }) satisfies Trajectory;

const records = (runId: string): StoreRecord[] =>
  [trajectory('p1', 0, 1, 1), trajectory('p1', 1, 0, 0.5), trajectory('p2', 0, 0, 0)].flatMap((t) => {
    // The keys a trajectory's records share (its step, prompt, sample and rollout).
    const keys = {
      runId,
      step: 1,
      promptUid: t.promptUid,
      sampleId: t.sampleId,
      rolloutIndex: t.rolloutIndex,
      time: 1,
    };
    return [
      { kind: 'trajectory' as const, ...keys, data: t },
      {
        kind: 'reward' as const,
        ...keys,
        data: { reward: t.reward, advantage: 0.5, detail: t.rewardDetail },
      },
    ];
  });

describe('SQLite store', () => {
  it('derives runs, steps, episodes, turns, tool calls, rewards and verdicts, and answers the curation queries', async () => {
    const store = createSqliteStore({ path: join(dir, 'a.db') });
    await store.doAppend(records('run-a'));
    await store.doAppend([
      {
        kind: 'metric',
        runId: 'run-a',
        step: 1,
        time: 2,
        data: { rewardMean: 0.33, successRate: 0.33, ndcgMean: 0.5 },
      },
    ]);
    await store.doAppend([
      {
        kind: 'event',
        runId: 'run-a',
        step: 0,
        time: 3,
        data: {
          type: 'verdict',
          promptUid: 'p1',
          sampleId: 's1-b0-p1#1',
          reason: 'judge_zero_ndcg_high',
          label: 'GT_ERROR',
          detail: { goldenAnswer: 'x' },
        },
      },
    ]);
    expect(store.successRatePerPrompt('run-a')).toEqual([
      { promptUid: 'p1', rollouts: 2, successes: 1, meanNdcg: 0.75, meanJudge: 0.5, successRate: 0.5 },
      { promptUid: 'p2', rollouts: 1, successes: 0, meanNdcg: 0, meanJudge: 0, successRate: 0 },
    ]);
    expect(store.ndcgVsJudge('run-a').map((r) => [r.sampleId, r.ndcg, r.judgeScore])).toEqual([
      ['s1-b0-p1#0', 1, 1],
      ['s1-b0-p1#1', 0.5, 0],
      ['s1-b0-p2#0', 0, 0],
    ]);
    expect(store.sql('SELECT count(*) AS n FROM turns')).toEqual([{ n: 6 }]);
    expect(
      store.sql(
        "SELECT tool, query, chosen_rank AS rank, golden_ranks AS golden FROM tool_calls WHERE sample_id = 's1-b0-p2#0'",
      ),
    ).toEqual([{ tool: 'search', query: 'q', rank: 1, golden: '[1]' }]);
    expect(store.sql('SELECT advantage, status FROM rewards LIMIT 1')).toEqual([
      { advantage: 0.5, status: 'ok' },
    ]);
    expect(store.sql('SELECT label FROM verdicts')).toEqual([{ label: 'GT_ERROR' }]);
    expect(store.sql('SELECT run_id, last_step FROM runs')).toEqual([{ run_id: 'run-a', last_step: 1 }]);
    expect(store.sql('SELECT success_rate FROM steps')).toEqual([{ success_rate: 0.33 }]);
    expect(() => store.sql('DELETE FROM runs')).toThrow(/read-only/);
    await store.close();
  });

  it('a run that stops without closing keeps every committed batch', async () => {
    const path = join(dir, 'b.db');
    const writer = createSqliteStore({ path });
    await writer.doAppend(records('run-b'));
    // No close(): a second connection (as after a crash) sees everything the first committed.
    const reader = createSqliteStore({ path });
    expect(await reader.doQuery({ kind: 'trajectory', runId: 'run-b' })).toHaveLength(3);
    expect(reader.successRatePerPrompt('run-b')).toHaveLength(2);
    await reader.close();
    await writer.close();
  });

  it('a closed store is its database file alone: a copy of that one file holds every record', async () => {
    const path = join(dir, 'closed.db');
    const writer = createSqliteStore({ path });
    await writer.doAppend(records('run-closed'));
    await writer.close();
    const copy = join(dir, 'closed-copy.db');
    await copyFile(path, copy);
    const reader = createSqliteStore({ path: copy });
    expect(await reader.doQuery({ kind: 'trajectory', runId: 'run-closed' })).toHaveLength(3);
    expect(reader.sql('SELECT count(*) AS n FROM runs')).toEqual([{ n: 1 }]);
    await reader.close();
  });

  it('writes a batch in one transaction: a record that fails writes none of the batch', async () => {
    const store = createSqliteStore({ path: join(dir, 'c.db') });
    const bad = {
      kind: 'trajectory' as const,
      runId: 'run-c',
      step: 1,
      time: 1,
      data: {
        turns: [
          {
            index: 0,
            text: 'x',
            forced: false,
            think: null,
            action: null,
            invalid: null,
            observation: 'o',
            search: { query: 'q', hitBasenames: [], chosenBasename: null, chosenRank: null, goldenRanks: [] },
          },
        ],
        sampleId: null,
        promptUid: null,
      },
    };
    await expect(
      store.doAppend([...records('run-c').slice(0, 2), bad as unknown as StoreRecord]),
    ).rejects.toThrow(/could not append/);
    expect(await store.doQuery({ kind: 'trajectory', runId: 'run-c' })).toEqual([]);
    expect(store.sql("SELECT count(*) AS n FROM episodes WHERE run_id = 'run-c'")).toEqual([{ n: 0 }]);
    await store.close();
  });

  it('sql() cannot write: every write attempt is an InvalidArgumentError naming the query, and nothing stored is lost', async () => {
    const path = join(dir, 'e.db');
    for (const store of [createSqliteStore({ path }), createSqliteStore({ path: ':memory:' })]) {
      await store.doAppend(records('run-e'));
      await store.doPutBlob('run-e', 'ckpt', new Uint8Array([1, 2, 3]));
      const before = await store.doQuery({ kind: 'trajectory', runId: 'run-e' });
      const counts = () =>
        store.sql<{ n: number }>(
          'SELECT (SELECT count(*) FROM records) + (SELECT count(*) FROM episodes) + (SELECT count(*) FROM runs) + (SELECT count(*) FROM blobs) AS n',
        )[0]!.n;
      const total = counts();
      const writes = [
        "INSERT INTO runs (run_id, started, last_step) VALUES ('x', 0, 0)",
        "INSERT INTO runs (run_id, started, last_step) VALUES ('x', 0, 0) RETURNING run_id",
        'UPDATE episodes SET ndcg = 0',
        'UPDATE episodes SET ndcg = 0 RETURNING ndcg',
        'DELETE FROM records',
        'DELETE FROM records RETURNING id',
        'DROP TABLE episodes',
        'CREATE TABLE x (a)',
        'CREATE TEMP TABLE x (a)',
        `ATTACH '${join(dir, 'attached.db')}' AS other`,
        "ATTACH ':memory:' AS other",
        'PRAGMA user_version = 7',
        'PRAGMA journal_mode = DELETE',
        'PRAGMA main.journal_mode = DELETE',
        'PRAGMA query_only = OFF',
        "PRAGMA 'query_only' = 0",
        '/* x */ PRAGMA [query_only](0)',
        'EXPLAIN PRAGMA query_only = OFF',
        'EXPLAIN QUERY PLAN PRAGMA query_only = OFF',
        'PRAGMA locking_mode = EXCLUSIVE',
        'PRAGMA case_sensitive_like = 1',
        'PRAGMA wal_checkpoint',
        'PRAGMA wal_checkpoint(TRUNCATE)',
        'VACUUM',
        `VACUUM INTO '${join(dir, 'copy.db')}'`,
        'REINDEX',
        'BEGIN',
        'SELECT 1; DELETE FROM records',
        'SELECT count(*) FROM records; DROP TABLE records',
        "SELECT ';'; DELETE FROM records -- a comment",
        'SELECT 1 /* ; */; DELETE FROM records',
        'CREATE TRIGGER t AFTER INSERT ON runs BEGIN DELETE FROM records; END',
        '',
      ];
      for (const query of writes) {
        let thrown: unknown;
        try {
          store.sql(query);
        } catch (error) {
          thrown = error;
        }
        expect(
          InvalidArgumentError.isInstance(thrown) && thrown.argument === 'query',
          `${query}: ${String(thrown)}`,
        ).toBe(true);
      }
      expect(counts()).toBe(total);
      // The read-only connection is as it was: still query_only, not locked, LIKE still case-blind.
      expect(store.sql('PRAGMA query_only')).toEqual([{ query_only: 1 }]);
      expect(store.sql("SELECT count(*) AS n FROM runs WHERE run_id LIKE 'RUN-%'")).toEqual([{ n: 1 }]);
      expect(store.sql('PRAGMA table_info(runs)').map((c) => c.name)).toEqual([
        'run_id',
        'started',
        'last_step',
      ]);
      expect(
        store.sql("SELECT name FROM pragma_database_list WHERE name <> 'main' AND name <> 'temp'"),
      ).toEqual([]);
      expect(store.sql('SELECT user_version FROM pragma_user_version')).toEqual([{ user_version: 0 }]);
      expect(await store.doQuery({ kind: 'trajectory', runId: 'run-e' })).toEqual(before);
      expect(await store.doGetBlob('run-e', 'ckpt')).toEqual(new Uint8Array([1, 2, 3]));
      // The store still writes, and sql() sees what it wrote.
      await store.doAppend([{ kind: 'metric', runId: 'run-e', step: 2, time: 2, data: { rewardMean: 1 } }]);
      expect(store.sql('SELECT step FROM steps WHERE run_id = ?', 'run-e')).toEqual([{ step: 2 }]);
      expect(store.sql('SELECT bytes FROM blobs')).toEqual([{ bytes: Buffer.from([1, 2, 3]) }]);
      await store.close();
    }
    expect(existsSync(join(dir, 'attached.db'))).toBe(false);
    expect(existsSync(join(dir, 'copy.db'))).toBe(false);
  });

  it('sql() binds values as better-sqlite3 did, and refuses the ones SQLite cannot hold instead of crashing', async () => {
    const store = createSqliteStore({ path: ':memory:' });
    await store.doAppend(records('run-f'));
    expect(
      store.sql('SELECT count(*) AS n FROM episodes WHERE run_id = ? AND judge_score >= ?', 'run-f', 1),
    ).toEqual([{ n: 1 }]);
    expect(
      store.sql('SELECT count(*) AS n FROM episodes WHERE run_id = ? AND judge_score >= ?', ['run-f', 0]),
    ).toEqual([{ n: 3 }]);
    expect(
      store.sql('SELECT count(*) AS n FROM episodes WHERE run_id = :run AND prompt_uid = @prompt', {
        run: 'run-f',
        prompt: 'p1',
      }),
    ).toEqual([{ n: 2 }]);
    expect(store.sql('SELECT ? AS a, ? AS b, ? AS c', null, undefined, 2n)).toEqual([
      { a: null, b: null, c: 2 },
    ]);
    expect(store.sql('SELECT ? AS b', Buffer.from([7]))).toEqual([{ b: Buffer.from([7]) }]);
    for (const value of [true, new Date(0), new Map(), [[1]], Symbol('s')])
      expect(() => store.sql('SELECT ? AS v', value), String(value)).toThrow(TypeError);
    expect(() => store.sql('SELECT ? AS a, ? AS b', 1)).toThrow(/Too few parameter values/);
    expect(() => store.sql('SELECT ? AS a', 1, 2)).toThrow(/Too many parameter values/);
    expect(() => store.sql('SELECT :a AS a', {})).toThrow(/Missing named parameter "a"/);
    await store.close();
  });

  it('imports JSONL logs', async () => {
    const logs = join(dir, 'logs');
    const jsonl = createJsonlStore({ dir: logs });
    await jsonl.doAppend(records('phase1'));
    await jsonl.doAppend([{ kind: 'metric', runId: 'phase1', step: 1, time: 2, data: { rewardMean: 1 } }]);
    const store = createSqliteStore({ path: join(dir, 'd.db') });
    expect(await importJsonlRuns(logs, store)).toEqual({ phase1: 7 });
    expect(store.successRatePerPrompt('phase1').map((r) => r.successRate)).toEqual([0.5, 0]);
    expect(await store.doQuery({ kind: 'reward', runId: 'phase1' })).toEqual(
      await jsonl.doQuery({ kind: 'reward', runId: 'phase1' }),
    );
    await store.close();
  });
});
