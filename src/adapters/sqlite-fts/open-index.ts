import { InvalidArgumentError } from '../../core/errors';
import { openSqlite, type SqliteDatabase, type SqliteStatement } from '../../provider-utils/sqlite';

const BUILD_IT = 'build it with indexPages or indexPageFolder';

/** A page index opened read-only; a file that cannot be opened is an error naming `dbPath`. */
export function openPageIndex(dbPath: string): SqliteDatabase {
  try {
    return openSqlite({ file: dbPath }, { readonly: true });
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'dbPath',
      message: `cannot open the index '${dbPath}' (${BUILD_IT})`,
      cause: error,
    });
  }
}

/** The error for a database whose tables are not a page index's (a query on them failed). */
export function notAPageIndex(dbPath: string, error: unknown): InvalidArgumentError {
  return new InvalidArgumentError({
    argument: 'dbPath',
    message: `'${dbPath}' is not a page index (${error instanceof Error ? error.message : String(error)}); ${BUILD_IT}`,
    cause: error,
  });
}

/** A row of the index's `pages` table as the search engine and the page reader select it. */
export interface PageRow {
  basename: string;
  text: string;
  imagePath: string | null;
  mime: string | null;
  width: number | null;
  height: number | null;
}

/**
 * A page index opened read-only with `sql` prepared on it; a file that is not a page index (the
 * statement does not prepare) is closed and refused, naming `dbPath`.
 */
export function preparePageIndex(
  dbPath: string,
  sql: string,
): { db: SqliteDatabase; statement: SqliteStatement } {
  const db = openPageIndex(dbPath);
  try {
    return { db, statement: db.prepare(sql) };
  } catch (error) {
    db.close();
    throw notAPageIndex(dbPath, error);
  }
}
