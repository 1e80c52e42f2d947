import { createHash } from 'node:crypto';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { basename as pathBasename, extname, join, resolve, sep } from 'node:path';
import sharp from 'sharp';
import type { z } from 'zod';
import {
  AbortedError,
  DatasetValidationError,
  InvalidArgumentError,
  ProviderCallError,
} from '../../core/errors';
import type { SearchEngine, SearchOptions } from '../../ports/search-engine';
import type { PageImage, SearchHit } from '../../ports/types';
import { parseSettings } from '../../provider-utils/settings';
import { openSqlite, type SqliteDatabase, type SqliteStatement } from '../../provider-utils/sqlite';
import { sqliteSearchSettingsSchema } from './settings';

const IMAGE_MIME: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.webp': 'image/webp',
};

/** Part of the index fingerprint: a schema change rebuilds old indexes. */
const SCHEMA_VERSION = 2;

const SCHEMA = `
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
    db = openSqlite({ file: dbPath });
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'dbPath',
      message: `cannot create the index '${dbPath}' (does its folder exist?)`,
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

/**
 * Indexes a folder of page images with a text file beside each (`deck1_3.png` + `deck1_3.txt`):
 * the basename is the image's file name. A page image without its text file is an error naming it.
 * With `shownTextExtension` (e.g. `.shown.txt`), a file with that ending beside a page, where
 * there is one, is what hits show instead of the indexed text (`PageRecord.shownText`).
 */
export async function indexPageFolder(
  dbPath: string,
  folder: string,
  options: { textExtension?: string; shownTextExtension?: string } = {},
): Promise<IndexResult> {
  const textExtension = options.textExtension ?? '.txt';
  if (
    options.shownTextExtension !== undefined &&
    (options.shownTextExtension === textExtension || options.shownTextExtension === '')
  )
    throw new InvalidArgumentError({
      argument: 'shownTextExtension',
      message: `must differ from textExtension ('${textExtension}') and not be empty`,
    });
  let names: string[];
  try {
    names = (await readdir(folder)).sort();
  } catch (error) {
    throw new InvalidArgumentError({ argument: 'folder', message: `cannot read '${folder}'`, cause: error });
  }
  const images = names.filter((name) => IMAGE_MIME[extname(name).toLowerCase()]);
  const root = await realpath(folder);
  // A link that leads out of the folder would make an outside file (/etc/passwd) searchable.
  // A file that cannot be resolved is left to the read below, which names what is missing.
  const inside = async (path: string) =>
    realpath(path).then(
      (real) => real.startsWith(root + sep),
      () => true,
    );
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const pages: PageRecord[] = [];
  for (const [i, name] of images.entries()) {
    const stem = name.slice(0, name.length - extname(name).length);
    const textPath = join(folder, `${stem}${textExtension}`);
    const imagePath = join(folder, name);
    if (!(await inside(imagePath)))
      throw new DatasetValidationError({
        row: i,
        field: 'imagePath',
        message: `page '${name}' is a link to a file outside '${folder}'`,
      });
    let bytes: Buffer;
    try {
      if (!(await inside(textPath)))
        throw new DatasetValidationError({
          row: i,
          field: 'text',
          message: `the text file of page '${name}' is a link to a file outside '${folder}'`,
        });
      bytes = await readFile(textPath);
    } catch (error) {
      if (DatasetValidationError.isInstance(error)) throw error;
      throw new DatasetValidationError({
        row: i,
        field: 'text',
        message: `page '${name}' has no text file '${pathBasename(textPath)}' beside it`,
        cause: error,
      });
    }
    const decode = (data: Buffer, path: string, field: string) => {
      try {
        return utf8.decode(data);
      } catch (error) {
        throw new DatasetValidationError({
          row: i,
          field,
          message: `'${pathBasename(path)}' is not UTF-8 text; convert it (e.g. iconv -t UTF-8)`,
          cause: error,
        });
      }
    };
    const text = decode(bytes, textPath, 'text');
    let shownText: string | undefined;
    if (options.shownTextExtension !== undefined) {
      const shownPath = join(folder, `${stem}${options.shownTextExtension}`);
      if (!(await inside(shownPath)))
        throw new DatasetValidationError({
          row: i,
          field: 'shownText',
          message: `the shown-text file of page '${name}' is a link to a file outside '${folder}'`,
        });
      const shown = await readFile(shownPath).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return null;
        throw new DatasetValidationError({
          row: i,
          field: 'shownText',
          message: `cannot read '${pathBasename(shownPath)}'`,
          cause: error,
        });
      });
      if (shown) shownText = decode(shown, shownPath, 'shownText');
    }
    pages.push({ basename: name, text, ...(shownText !== undefined && { shownText }), imagePath });
  }
  return indexPages(dbPath, pages);
}

export type SqliteSearchSettings = z.input<typeof sqliteSearchSettingsSchema>;

export interface SqliteSearchEngine extends SearchEngine {
  readonly provider: 'sqlite-fts';
  close(): void;
}

/** Words of a query as FTS5 string literals joined with OR: user text can never be FTS5 syntax. */
export function ftsQuery(query: string): string | null {
  // Diacritics off and case folded as the index's unicode61 tokenizer does (so 'İstanbul' and a
  // decomposed 'Zürich' are one word each).
  const folded = query.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
  const words = folded.match(/[\p{L}\p{N}]+/gu) ?? [];
  const unique = [...new Set(words)];
  return unique.length === 0 ? null : unique.map((w) => `"${w}"`).join(' OR ');
}

/**
 * BM25 search (SQLite FTS5, `bm25()`, lower is better) over an index of pages; hits carry the page
 * basename, text, image and the score `-bm25` (higher is better). The database is opened read-only.
 */
export function createSqliteSearchEngine(settings: SqliteSearchSettings): SqliteSearchEngine {
  const { dbPath, includeImages, maxTextChars } = parseSettings(
    'createSqliteSearchEngine',
    sqliteSearchSettingsSchema,
    settings,
  );
  let db: SqliteDatabase;
  try {
    db = openSqlite({ file: dbPath }, { readonly: true });
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'dbPath',
      message: `cannot open the index '${dbPath}' (build it with indexPages or indexPageFolder)`,
      cause: error,
    });
  }
  let search: SqliteStatement;
  try {
    search = db.prepare(
      'SELECT p.id AS id, p.basename AS basename, COALESCE(p.shown_text, p.text) AS text, p.image_path AS imagePath, p.mime AS mime, p.width AS width, p.height AS height, bm25(pages_fts) AS rank FROM pages_fts JOIN pages p ON p.id = pages_fts.rowid WHERE pages_fts MATCH ? ORDER BY rank, p.id LIMIT ?',
    );
  } catch (error) {
    db.close();
    throw new InvalidArgumentError({
      argument: 'dbPath',
      message: `'${dbPath}' is not a page index (${error instanceof Error ? error.message : String(error)}); build it with indexPages or indexPageFolder`,
      cause: error,
    });
  }
  const images = new Map<string, Promise<Uint8Array>>();
  const imageOf = (path: string) => {
    let bytes = images.get(path);
    if (!bytes) {
      bytes = readFile(path).then((b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
      bytes.catch(() => images.delete(path));
      // A small cache: the same pages come back across rollouts of a group.
      if (images.size > 256) images.delete(images.keys().next().value!);
      images.set(path, bytes);
    }
    return bytes;
  };
  return {
    specificationVersion: 'v1',
    provider: 'sqlite-fts',
    async doSearch(query: string, options: SearchOptions): Promise<SearchHit[]> {
      if (options.signal?.aborted)
        throw new AbortedError({ what: 'sqlite-fts search', cause: options.signal.reason });
      if (!(Number.isInteger(options.topK) && options.topK > 0))
        throw new InvalidArgumentError({
          argument: 'topK',
          message: `must be a positive integer, got ${String(options.topK)}`,
        });
      const match = ftsQuery(String(query));
      if (match === null) return [];
      let rows: Array<{
        id: number;
        basename: string;
        text: string;
        imagePath: string | null;
        mime: string | null;
        width: number | null;
        height: number | null;
        rank: number;
      }>;
      try {
        rows = search.all(match, options.topK) as typeof rows;
      } catch (error) {
        throw new ProviderCallError({
          port: 'searchEngine',
          provider: 'sqlite-fts',
          message: `search failed: ${error instanceof Error ? error.message : String(error)}`,
          isRetryable: false,
          cause: error,
        });
      }
      return Promise.all(
        rows.map(async (row) => {
          const hit: SearchHit = {
            id: String(row.id),
            basename: row.basename,
            score: -row.rank,
            text: maxTextChars === null ? row.text : row.text.slice(0, maxTextChars),
          };
          if (includeImages && row.imagePath && row.mime && row.width && row.height) {
            let bytes: Uint8Array;
            try {
              bytes = await imageOf(row.imagePath);
            } catch (error) {
              throw new ProviderCallError({
                port: 'searchEngine',
                provider: 'sqlite-fts',
                message: `page '${row.basename}': cannot read its image '${row.imagePath}'`,
                isRetryable: false,
                cause: error,
              });
            }
            const image: PageImage = { mimeType: row.mime, width: row.width, height: row.height, bytes };
            hit.image = image;
          }
          return hit;
        }),
      );
    },
    close() {
      db.close();
    },
  };
}
