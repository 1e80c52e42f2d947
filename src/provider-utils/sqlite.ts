import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import Libsql from 'libsql';
import { scanSql, type SqlText } from './sql-text';

/**
 * SQLite for the adapters (the SQLite store, the FTS5 page index, curation's golden pages), over
 * libsql: its binaries ship inside its npm packages, so installing compiles and downloads nothing.
 * Its API is better-sqlite3's, with gaps this module closes so that the adapters behave as they did
 * on better-sqlite3:
 * - values it cannot bind (a boolean, a Date, a lone Buffer or object) abort the whole process
 *   (a panic in its native code): here they are a TypeError, as better-sqlite3 threw;
 * - it binds NULL for missing values and drops extra ones: here that is a RangeError;
 * - it prepares the first statement of a string and ignores the rest: here a string of no
 *   statement or of more than one is a RangeError;
 * - it ignores the `readonly` and `fileMustExist` options: a read-only database is opened
 *   through a `mode=ro` URI, which can neither write nor create a file;
 * - rows come back without its `_metadata`, and BLOBs always as Buffers (all() gave ArrayBuffers);
 * - a failed transaction is rolled back only where SQLite has not already rolled it back, and
 *   transactions nest (savepoints);
 * - it waits up to 5 s on a locked database (better-sqlite3's default), and a closed database's
 *   statements refuse to run.
 */

/** Where a database is: a file (':memory:': a private in-memory database), or an in-memory database that every connection opened with the same `sharedMemory` name shares. */
export type SqliteLocation = { file: string } | { sharedMemory: string };

export type SqliteRow = Record<string, unknown>;

export interface SqliteStatement {
  /** Whether the statement returns data (a SELECT, a PRAGMA that reads, a RETURNING clause). */
  readonly reader: boolean;
  run(...params: unknown[]): { changes: number; lastInsertRowid: number };
  /** The first row (a SqliteRow), or undefined. */
  get(...params: unknown[]): unknown;
  /** Every row (SqliteRows). */
  all(...params: unknown[]): unknown[];
}

export interface SqliteDatabase {
  readonly open: boolean;
  readonly inTransaction: boolean;
  prepare(source: string): SqliteStatement;
  exec(source: string): void;
  /** `PRAGMA source`, its rows. */
  pragma(source: string): unknown[];
  /** `fn` in a transaction (a savepoint inside another): committed when it returns, rolled back when it throws. */
  transaction<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R;
  close(): void;
}

const CANNOT_BIND = 'SQLite3 can only bind numbers, strings, bigints, buffers, and null';
const MAX_INT64 = 2n ** 63n - 1n;

function bindable(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' || typeof value === 'string') return value;
  if (typeof value === 'bigint') {
    if (value > MAX_INT64 || value < -MAX_INT64 - 1n)
      throw new RangeError('BigInt value is too large to be represented as a SQLite3 integer');
    return value;
  }
  if (ArrayBuffer.isView(value))
    return value instanceof Uint8Array
      ? value
      : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(CANNOT_BIND);
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
};

/**
 * The values of a call as one positional list over every parameter index, as better-sqlite3 binds
 * them: bare `?` take the plain arguments (and the elements of array arguments) in order; named
 * parameters (`:a`, `@a`, `$a`, and `?NNN` as `NNN`) take the properties of one plain object.
 */
function bindValues(text: SqlText, args: readonly unknown[]): unknown[] {
  // The common case: only bare `?`, one plain value each.
  if (
    args.length === text.names.length &&
    text.names.every((name) => name === null) &&
    !args.some((arg) => Array.isArray(arg) || isPlainObject(arg))
  )
    return args.map(bindable);
  const values: unknown[] = new Array(text.names.length).fill(null);
  let anonymous = 0;
  let count = 0;
  let named = false;
  const nextAnonymous = (value: unknown) => {
    while (anonymous < text.names.length && text.names[anonymous] !== null) anonymous++;
    if (anonymous >= text.names.length) throw new RangeError('Too many parameter values were provided');
    values[anonymous++] = bindable(value);
    count++;
  };
  for (const arg of args) {
    if (Array.isArray(arg)) {
      for (const element of arg) nextAnonymous(element);
    } else if (isPlainObject(arg)) {
      if (named) throw new TypeError('You cannot specify named parameters in two different objects');
      named = true;
      text.names.forEach((name, i) => {
        if (name === null) return;
        const key = name.slice(1);
        if (!Object.hasOwn(arg, key)) throw new RangeError(`Missing named parameter "${key}"`);
        values[i] = bindable(arg[key]);
        count++;
      });
    } else nextAnonymous(arg);
  }
  if (count < text.names.length) {
    if (!named && text.names.some((name) => name !== null)) throw new TypeError('Missing named parameters');
    throw new RangeError('Too few parameter values were provided');
  }
  return values;
}

/** A row as better-sqlite3 gives it: without libsql's `_metadata`, its BLOBs as Buffers. */
function rowOf(row: Record<string, unknown>, dropMetadata: boolean): SqliteRow {
  if (!dropMetadata && !Object.values(row).some((value) => value instanceof ArrayBuffer)) return row;
  const out: SqliteRow = {};
  for (const [key, value] of Object.entries(row)) {
    if (dropMetadata && key === '_metadata') continue;
    out[key] = value instanceof ArrayBuffer ? Buffer.from(value) : value;
  }
  return out;
}

/** The libsql name of a location: a path, or a URI for read-only and shared in-memory databases. */
function nameOf(location: SqliteLocation, readonly: boolean): string {
  if ('sharedMemory' in location)
    return `file:/searcher-rl-${encodeURIComponent(location.sharedMemory)}?vfs=memdb${readonly ? '&mode=ro' : ''}`;
  if (typeof location.file !== 'string') throw new TypeError('Expected the database file to be a string');
  if (location.file === ':memory:') {
    if (readonly) throw new TypeError('In-memory/temporary databases cannot be readonly');
    return ':memory:';
  }
  // Resolved, so that libsql never takes a path for the address of a remote database.
  const path = resolve(location.file);
  return readonly ? `${pathToFileURL(path).href}?mode=ro` : path;
}

/** Opens a connection; `readonly`: it can neither write nor create the database, which must exist. */
export function openSqlite(location: SqliteLocation, options: { readonly?: boolean } = {}): SqliteDatabase {
  const db = new Libsql(nameOf(location, options.readonly === true), { timeout: 5000 });
  let open = true;
  let savepoints = 0;
  const mustBeOpen = () => {
    if (!open) throw new TypeError('The database connection is not open');
  };
  const prepare = (source: string): SqliteStatement => {
    if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string');
    mustBeOpen();
    const text = scanSql(source);
    if (text.statements === 0) throw new RangeError('The supplied SQL string contains no statements');
    if (text.statements > 1) throw new RangeError('The supplied SQL string contains more than one statement');
    const statement = db.prepare(source);
    const bound = (params: readonly unknown[]) => (mustBeOpen(), [bindValues(text, params)] as unknown[]);
    return {
      get reader() {
        return statement.reader;
      },
      run(...params) {
        const { changes, lastInsertRowid } = statement.run(...bound(params));
        return { changes, lastInsertRowid: Number(lastInsertRowid) };
      },
      get(...params) {
        const row = statement.get(...bound(params)) as Record<string, unknown> | undefined;
        return row === undefined ? undefined : rowOf(row, true);
      },
      all(...params) {
        return (statement.all(...bound(params)) as Array<Record<string, unknown>>).map((row) =>
          rowOf(row, false),
        );
      },
    };
  };
  return {
    get open() {
      return open;
    },
    get inTransaction() {
      return open && db.inTransaction;
    },
    prepare,
    exec(source) {
      if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string');
      mustBeOpen();
      db.exec(source);
    },
    pragma(source) {
      return prepare(`PRAGMA ${source}`).all();
    },
    transaction(fn) {
      if (typeof fn !== 'function') throw new TypeError('Expected first argument to be a function');
      return (...args) => {
        mustBeOpen();
        const nested = db.inTransaction;
        const savepoint = `searcher_rl_${++savepoints}`;
        db.exec(nested ? `SAVEPOINT ${savepoint}` : 'BEGIN');
        try {
          const result = fn(...args);
          if (result !== null && typeof (result as { then?: unknown })?.then === 'function')
            throw new TypeError('Transaction function cannot return a promise');
          db.exec(nested ? `RELEASE ${savepoint}` : 'COMMIT');
          return result;
        } catch (error) {
          // SQLite rolls a transaction back itself on some failures (a full disk, an I/O error).
          if (db.inTransaction)
            db.exec(nested ? `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}` : 'ROLLBACK');
          throw error;
        } finally {
          savepoints--;
        }
      };
    },
    close() {
      if (!open) return;
      open = false;
      db.close();
    },
  };
}
