import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scanSql } from './sql-text';
import { openSqlite } from './sqlite';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sqlite-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('scanSql', () => {
  it('counts statements as sqlite3_complete() ends them: not inside strings, names, comments or a trigger body', () => {
    const byCount: Array<[statements: number, sql: string[]]> = [
      [0, ['', '  ', ';;', '-- only a comment', '/* only */ ; /* comments */']],
      [
        1,
        [
          'SELECT 1',
          'SELECT 1;',
          'SELECT 1;;  -- done',
          "SELECT ';'",
          'SELECT "a;b" FROM t',
          'SELECT [a;b] FROM t',
          'SELECT `a;b` FROM t',
          "SELECT 'it''s; fine'",
          'SELECT 1 /* ; */',
          'SELECT 1 -- ;\n',
          'SELECT 1 /* unterminated ;',
          'EXPLAIN SELECT 1; ',
          'CREATE TRIGGER t AFTER INSERT ON x BEGIN DELETE FROM y; SELECT CASE WHEN 1 THEN 2 END; END;',
          'CREATE TEMP TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END',
        ],
      ],
      [
        2,
        [
          'SELECT 1; SELECT 2',
          'SELECT 1;DELETE FROM t',
          "SELECT ';'; DROP TABLE t -- x",
          'SELECT 1 /* ; */; DELETE FROM t',
          'CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END; SELECT 2',
          'SELECT 1\n;\nATTACH x AS y',
        ],
      ],
    ];
    for (const [statements, sqls] of byCount)
      for (const sql of sqls) expect(scanSql(sql).statements, sql).toBe(statements);
  });

  it('numbers parameters as SQLite does: bare ?, ?NNN, and names, each name once', () => {
    const names = (sql: string) => scanSql(sql).names;
    expect(names('SELECT 1')).toEqual([]);
    expect(names('SELECT ?, ?')).toEqual([null, null]);
    expect(names('SELECT ?3')).toEqual([null, null, '?3']);
    expect(names('SELECT ?, ?1')).toEqual(['?1']);
    expect(names('SELECT ?1, ?1, ?')).toEqual(['?1', null]);
    expect(names('SELECT :a, @b, $c, :a, #d')).toEqual([':a', '@b', '$c', '#d']);
    expect(names('SELECT ?, :a, ?')).toEqual([null, ':a', null]);
    expect(names('SELECT \'?\', ":x", [?] -- ?\n, :a /* :b */')).toEqual([':a']);
    expect(names('SELECT $a::b(x y), $c(d)')).toEqual(['$a::b(x', '$c(d)']);
  });

  it('gives the first tokens of the first statement, unquoted and lower-cased', () => {
    expect(scanSql("/* c */ PRAGMA main.'Query_Only' = 0; SELECT 1").head).toEqual([
      'pragma',
      'main',
      '.',
      'query_only',
      '=',
      '0',
    ]);
    expect(scanSql('pragma [a]("b")').head).toEqual(['pragma', 'a', '(', 'b', ')']);
  });
});

describe('openSqlite', () => {
  it('binds what better-sqlite3 bound, and throws for what it refused instead of aborting the process', () => {
    const db = openSqlite({ file: ':memory:' });
    const one = (sql: string, ...params: unknown[]) => db.prepare(sql).get(...params);
    expect(one('SELECT ? AS a, ? AS b, ? AS c, ? AS d, ? AS e', 1.5, 'x', 3n, null, undefined)).toEqual({
      a: 1.5,
      b: 'x',
      c: 3,
      d: null,
      e: null,
    });
    expect(one('SELECT ? AS v', null)).toEqual({ v: null });
    expect(one('SELECT ? AS v', Buffer.from([1, 2]))).toEqual({ v: Buffer.from([1, 2]) });
    expect(one('SELECT ? AS v', new Uint8Array([3]))).toEqual({ v: Buffer.from([3]) });
    expect(one('SELECT ? AS a, ? AS b', [1, 2])).toEqual({ a: 1, b: 2 });
    expect(one('SELECT ? AS a, :b AS b, ? AS c', 1, { b: 2 }, 3)).toEqual({ a: 1, b: 2, c: 3 });
    expect(one('SELECT :a AS a, @a AS b, $a AS c', { a: 'x' })).toEqual({ a: 'x', b: 'x', c: 'x' });
    expect(one('SELECT ?2 AS a, ?1 AS b', { 1: 'one', 2: 'two' })).toEqual({ a: 'two', b: 'one' });
    for (const value of [
      true,
      false,
      new Date(0),
      new Map(),
      [[1]],
      Symbol('s'),
      () => 1,
      new ArrayBuffer(1),
    ]) {
      expect(() => one('SELECT ? AS v', value), String(value)).toThrow(
        new TypeError('SQLite3 can only bind numbers, strings, bigints, buffers, and null'),
      );
    }
    expect(() => one('SELECT :a AS v', { a: true })).toThrow(TypeError);
    expect(() => one('SELECT ? AS v', 2n ** 63n)).toThrow(RangeError);
    expect(() => one('SELECT ? AS a, ? AS b', 1)).toThrow(
      new RangeError('Too few parameter values were provided'),
    );
    expect(() => one('SELECT ? AS a', 1, 2)).toThrow(
      new RangeError('Too many parameter values were provided'),
    );
    expect(() => one('SELECT ? AS a', { a: 1 })).toThrow(
      new RangeError('Too few parameter values were provided'),
    );
    expect(() => one('SELECT :a AS a', {})).toThrow(new RangeError('Missing named parameter "a"'));
    expect(() => one('SELECT :a AS a')).toThrow(new TypeError('Missing named parameters'));
    expect(() => one('SELECT :a AS a', { a: 1 }, { a: 2 })).toThrow(
      new TypeError('You cannot specify named parameters in two different objects'),
    );
    db.close();
  });

  it('prepares exactly one statement, and gives rows without metadata and BLOBs as Buffers', () => {
    const db = openSqlite({ file: ':memory:' });
    db.exec("CREATE TABLE t (a INTEGER PRIMARY KEY, b BLOB); INSERT INTO t (b) VALUES (x'0102');");
    expect(() => db.prepare('SELECT 1; DELETE FROM t')).toThrow(
      new RangeError('The supplied SQL string contains more than one statement'),
    );
    expect(() => db.prepare(' -- nothing')).toThrow(
      new RangeError('The supplied SQL string contains no statements'),
    );
    expect(() => db.prepare(1 as never)).toThrow(TypeError);
    expect(db.prepare('SELECT a, b FROM t;  -- trailing').all()).toEqual([{ a: 1, b: Buffer.from([1, 2]) }]);
    expect(db.prepare('SELECT a, b FROM t').get()).toEqual({ a: 1, b: Buffer.from([1, 2]) });
    expect(db.prepare('SELECT a FROM t WHERE a = ?').get(9)).toBeUndefined();
    expect(db.prepare('INSERT INTO t (b) VALUES (?)').run(Buffer.from([3]))).toEqual({
      changes: 1,
      lastInsertRowid: 2,
    });
    expect(db.prepare('SELECT 1 AS one').reader).toBe(true);
    expect(db.prepare('DELETE FROM t').reader).toBe(false);
    expect(db.prepare('DELETE FROM t RETURNING a').reader).toBe(true);
    expect(db.pragma('foreign_keys')).toEqual([{ foreign_keys: 1 }]);
    db.close();
    db.close();
    expect(db.open).toBe(false);
    expect(() => db.prepare('SELECT 1')).toThrow(/not open/);
  });

  it('has FTS5 with bm25()', () => {
    const db = openSqlite({ file: ':memory:' });
    db.exec("CREATE VIRTUAL TABLE f USING fts5(text, tokenize='unicode61 remove_diacritics 2')");
    const insert = db.prepare('INSERT INTO f (rowid, text) VALUES (?, ?)');
    insert.run(1, 'a fox and a dog');
    insert.run(2, 'fox fox Füchse');
    insert.run(3, 'a cat');
    const rows = db
      .prepare('SELECT rowid AS id, bm25(f) AS rank FROM f WHERE f MATCH ? ORDER BY rank')
      .all('"fox" OR "fuchse"') as Array<{ id: number; rank: number }>;
    expect(rows.map((r) => r.id)).toEqual([2, 1]);
    expect(rows[0]!.rank).toBeLessThan(rows[1]!.rank);
    expect(rows[1]!.rank).toBeLessThan(0);
    db.close();
  });

  it('commits a transaction, rolls it back on a throw, and nests savepoints', () => {
    const db = openSqlite({ file: ':memory:' });
    db.exec('CREATE TABLE t (a INTEGER NOT NULL)');
    const insert = db.prepare('INSERT INTO t (a) VALUES (?)');
    const count = () => (db.prepare('SELECT count(*) AS n FROM t').get() as { n: number }).n;
    expect(db.transaction((a: number) => (insert.run(a), 'done'))(1)).toBe('done');
    expect(() => db.transaction(() => (insert.run(2), insert.run(null)))()).toThrow(/NOT NULL/);
    expect(count()).toBe(1);
    db.transaction(() => {
      insert.run(3);
      expect(() => db.transaction(() => (insert.run(4), insert.run(null)))()).toThrow(/NOT NULL/);
      expect(db.inTransaction).toBe(true);
    })();
    expect(db.prepare('SELECT a FROM t ORDER BY a').all()).toEqual([{ a: 1 }, { a: 3 }]);
    expect(() => db.transaction(async () => insert.run(5))()).toThrow(/cannot return a promise/);
    expect(count()).toBe(2);
    expect(db.inTransaction).toBe(false);
    db.close();
  });

  it('opens read-only through a URI: no write, no file created, any path', () => {
    const path = join(dir, 'odd name #1 ?x=%20.db');
    const writer = openSqlite({ file: path });
    writer.exec("PRAGMA journal_mode = WAL; CREATE TABLE t (a); INSERT INTO t VALUES ('kept');");
    const reader = openSqlite({ file: path }, { readonly: true });
    expect(reader.prepare('SELECT a FROM t').all()).toEqual([{ a: 'kept' }]);
    expect(() => reader.prepare('DELETE FROM t').run()).toThrow(
      expect.objectContaining({ code: 'SQLITE_READONLY' }),
    );
    reader.exec('PRAGMA query_only = OFF');
    expect(() => reader.prepare("INSERT INTO t VALUES ('x') RETURNING a").all()).toThrow(
      expect.objectContaining({ code: 'SQLITE_READONLY' }),
    );
    writer.prepare('INSERT INTO t VALUES (?)').run('later');
    expect(reader.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 2 });
    reader.close();
    writer.close();
    const missing = join(dir, 'missing.db');
    expect(() => openSqlite({ file: missing }, { readonly: true })).toThrow();
    expect(existsSync(missing)).toBe(false);
    expect(() => openSqlite({ file: ':memory:' }, { readonly: true })).toThrow(TypeError);
  });

  it('shares an in-memory database between the connections of one name only', () => {
    const a = openSqlite({ sharedMemory: 'one' });
    a.exec("CREATE TABLE t (a); INSERT INTO t VALUES ('a');");
    const reader = openSqlite({ sharedMemory: 'one' }, { readonly: true });
    expect(reader.prepare('SELECT a FROM t').all()).toEqual([{ a: 'a' }]);
    expect(() => reader.prepare('DELETE FROM t').run()).toThrow(
      expect.objectContaining({ code: 'SQLITE_READONLY' }),
    );
    const other = openSqlite({ sharedMemory: 'two' });
    expect(other.prepare("SELECT count(*) AS n FROM sqlite_schema WHERE name = 't'").get()).toEqual({ n: 0 });
    for (const db of [a, reader, other]) db.close();
  });
});
