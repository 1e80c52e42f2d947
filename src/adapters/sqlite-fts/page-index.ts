import { createHash } from 'node:crypto';
import { mkdir, stat } from 'node:fs/promises';
import { dirname, extname, resolve } from 'node:path';
import sharp from 'sharp';
import { DatasetValidationError, InvalidArgumentError } from '../../core/errors';
import { openSqlite, type SqliteDatabase } from '../../provider-utils/sqlite';
import { notAPageIndex, openPageIndex } from './open-index';

export const IMAGE_MIME: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
};

/** Part of the index fingerprint: a schema change rebuilds old indexes. */
const SCHEMA_VERSION = 2;

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS pages (
  id INTEGER PRIMARY KEY,
  basename TEXT NOT NULL UNIQUE,
  text TEXT NOT NULL,
  shown_text TEXT,
  image_path TEXT,
  mime TEXT,
  width INTEGER,
  height INTEGER
);
CREATE VIRTUAL TABLE IF NOT EXISTS pages_fts USING fts5(text, content='pages', content_rowid='id', tokenize='unicode61 remove_diacritics 2');
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
`;

/** One page to index: its basename (what NDCG compares), its text, and optionally its image file. */
export interface PageRecord {
  basename: string;
  /** What the index searches (all of the page's text, small print included). */
  text: string;
  /**
   * What a hit shows a text-only policy, when that differs from `text`: what a vision model would
   * perceive of the page image (docs/method.md#what-a-text-policy-perceives). Default: `text`.
   */
  shownText?: string;
  imagePath?: string;
}

/** What indexing did: the pages indexed, and whether the index was rebuilt. */
export interface IndexResult {
  /** Pages in the index. */
  pages: number;
  /** False when the index already matched the input and was reused. */
  rebuilt: boolean;
}

/**
 * Builds (or reuses) a SQLite FTS5 index of pages at `dbPath`. The input's fingerprint (basenames,
 * texts, image paths, sizes and modification times) is stored with the index; the same input
 * reuses it, a changed one rebuilds it in one transaction.
 */
export async function indexPages(dbPath: string, pages: readonly PageRecord[]): Promise<IndexResult> {
  if (typeof dbPath !== 'string' || dbPath.length === 0)
    throw new InvalidArgumentError({ argument: 'dbPath', message: 'must be a file path' });
  if (!Array.isArray(pages))
    throw new InvalidArgumentError({
      argument: 'pages',
      message: `must be an array of {basename, text, imagePath?}, got ${pages === null ? 'null' : typeof pages}`,
    });
  const seen = new Set<string>();
  const rows: Array<PageRecord & { mime: string | null; width: number | null; height: number | null }> = [];
  const hash = createHash('sha256');
  for (const [i, page] of pages.entries()) {
    if (!page || typeof page.basename !== 'string' || page.basename.length === 0)
      throw new DatasetValidationError({ row: i, field: 'basename', message: 'must be a non-empty string' });
    // A basename names a page, never a path: NDCG compares it, and readers may join it to a folder.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: a NUL in a file name is refused on purpose.
    if (/[/\\\u0000]/.test(page.basename) || page.basename === '.' || page.basename === '..')
      throw new DatasetValidationError({
        row: i,
        field: 'basename',
        message: `'${page.basename}' is a path; give the file name only`,
      });
    if (typeof page.text !== 'string')
      throw new DatasetValidationError({ row: i, field: 'text', message: 'must be a string' });
    if (/[\uD800-\uDFFF]/u.test(page.text))
      throw new DatasetValidationError({
        row: i,
        field: 'text',
        message: 'has a lone UTF-16 surrogate (not valid Unicode)',
      });
    if (
      page.shownText !== undefined &&
      (typeof page.shownText !== 'string' || /[\uD800-\uDFFF]/u.test(page.shownText))
    )
      throw new DatasetValidationError({
        row: i,
        field: 'shownText',
        message: 'must be a string of valid Unicode',
      });
    if (seen.has(page.basename))
      throw new DatasetValidationError({
        row: i,
        field: 'basename',
        message: `'${page.basename}' appears twice`,
      });
    seen.add(page.basename);
    let mime: string | null = null;
    let width: number | null = null;
    let height: number | null = null;
    if (page.imagePath !== undefined) {
      mime = IMAGE_MIME[extname(page.imagePath).toLowerCase()] ?? null;
      if (!mime)
        throw new DatasetValidationError({
          row: i,
          field: 'imagePath',
          message: `'${page.imagePath}' is not a PNG, JPEG or WebP file`,
        });
      let info;
      try {
        info = await stat(page.imagePath);
      } catch (error) {
        throw new DatasetValidationError({
          row: i,
          field: 'imagePath',
          message: `cannot read '${page.imagePath}'`,
          cause: error,
        });
      }
      let meta;
      try {
        meta = await sharp(page.imagePath).metadata();
      } catch (error) {
        throw new DatasetValidationError({
          row: i,
          field: 'imagePath',
          message: `'${page.imagePath}' is not a readable image`,
          cause: error,
        });
      }
      width = meta.width ?? null;
      height = meta.height ?? null;
      hash.update(`${resolve(page.imagePath)}\u0000${info.size}\u0000${info.mtimeMs}\u0000`);
    }
    hash.update(`${page.basename}\u0000${page.text}\u0000${page.shownText ?? '\u0002'}\u0001`);
    rows.push({ ...page, mime, width, height });
  }
  hash.update(`schema ${SCHEMA_VERSION}`);
  const fingerprint = hash.digest('hex');
  let db: SqliteDatabase;
  try {
    // The index is a cache (.cache/searcher-rl/...): its folder is made as needed.
    await mkdir(dirname(resolve(dbPath)), { recursive: true });
    db = openSqlite({ file: dbPath });
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'dbPath',
      message: `cannot create the index '${dbPath}': ${error instanceof Error ? error.message : String(error)}`,
      cause: error,
    });
  }
  try {
    try {
      db.exec(SCHEMA);
      // An index made before `shown_text` existed gains the column (its fingerprint differs, so it is rebuilt below).
      const columns = db.prepare('PRAGMA table_info(pages)').all() as Array<{ name: string }>;
      if (!columns.some((c) => c.name === 'shown_text'))
        db.exec('ALTER TABLE pages ADD COLUMN shown_text TEXT');
    } catch (error) {
      throw new InvalidArgumentError({
        argument: 'dbPath',
        message: `'${dbPath}' is not a page index (${error instanceof Error ? error.message : String(error)}); remove it or choose another path`,
        cause: error,
      });
    }
    const stored = db.prepare('SELECT value FROM meta WHERE key = ?').get('fingerprint') as
      | { value: string }
      | undefined;
    if (stored?.value === fingerprint) return { pages: rows.length, rebuilt: false };
    const insert = db.prepare(
      'INSERT INTO pages (basename, text, shown_text, image_path, mime, width, height) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    db.transaction(() => {
      db.exec("DELETE FROM pages; INSERT INTO pages_fts(pages_fts) VALUES('delete-all');");
      for (const r of rows)
        insert.run(
          r.basename,
          r.text,
          r.shownText ?? null,
          r.imagePath === undefined ? null : resolve(r.imagePath),
          r.mime,
          r.width,
          r.height,
        );
      db.exec("INSERT INTO pages_fts(pages_fts) VALUES('rebuild');");
      db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run('fingerprint', fingerprint);
    })();
    return { pages: rows.length, rebuilt: true };
  } finally {
    db.close();
  }
}

/** What a page index holds: its number of pages, and which of `basenames` it lacks. */
export function inspectPageIndex(
  dbPath: string,
  basenames: Iterable<string> = [],
): { pages: number; missing: string[] } {
  const db = openPageIndex(dbPath);
  try {
    let pages: number;
    let has: (basename: string) => boolean;
    try {
      pages = (db.prepare('SELECT COUNT(*) AS n FROM pages').get() as { n: number }).n;
      const find = db.prepare('SELECT 1 AS found FROM pages WHERE basename = ?');
      has = (basename) => find.get(basename) !== undefined;
    } catch (error) {
      throw notAPageIndex(dbPath, error);
    }
    const missing = [...new Set(basenames)].filter((b) => !has(b));
    return { pages, missing };
  } finally {
    db.close();
  }
}
