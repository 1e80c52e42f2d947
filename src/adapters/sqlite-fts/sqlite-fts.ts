import { readFile } from 'node:fs/promises';
import type { z } from 'zod';
import { AbortedError, InvalidArgumentError, ProviderCallError } from '../../core/errors';
import type { SearchEngine, SearchOptions } from '../../ports/search-engine';
import type { PageImage, SearchHit } from '../../ports/types';
import { parseSettings } from '../../provider-utils/settings';
import { type PageRow, preparePageIndex } from './open-index';
import { sqliteSearchSettingsSchema } from './settings';

export { indexPages, inspectPageIndex, type PageRecord, type IndexResult } from './page-index';
export { indexPageFolder, indexCorpusFile } from './page-sources';
export { openPageReader, type IndexedPage, type PageReader } from './page-reader';

/** Settings of `createSqliteSearchEngine` (`sqliteSearchSettingsSchema`). */
export type SqliteSearchSettings = z.input<typeof sqliteSearchSettingsSchema>;

export interface SqliteSearchEngine extends SearchEngine {
  readonly provider: 'sqlite-fts';
  /** Closes the database. */
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
  const { dbPath, includeImages, maxTextChars, queryCache, imageCacheBytes } = parseSettings(
    'createSqliteSearchEngine',
    sqliteSearchSettingsSchema,
    settings,
  );
  const { db, statement: search } = preparePageIndex(
    dbPath,
    // The top rows ranked on the FTS table alone, then joined with their pages: joined first, every
    // matching page's text went through the sort (0.77 against 0.65 ms a query on the demo's slides).
    'SELECT p.id AS id, p.basename AS basename, COALESCE(p.shown_text, p.text) AS text, p.image_path AS imagePath, p.mime AS mime, p.width AS width, p.height AS height, hits.rank AS rank FROM (SELECT rowid AS id, bm25(pages_fts) AS rank FROM pages_fts WHERE pages_fts MATCH ? ORDER BY rank, rowid LIMIT ?) AS hits JOIN pages p ON p.id = hits.id ORDER BY hits.rank, p.id',
  );
  type Row = PageRow & { id: number; rank: number };
  let closed = false;
  // Each query's rows as last fetched, with the LIMIT they were fetched under: the order (rank,
  // then id) is total, so the first k rows of a larger LIMIT are the rows of LIMIT k.
  const answered = new Map<string, { limit: number; rows: Row[] }>();
  const rowsOf = (match: string, topK: number): Row[] => {
    const kept = answered.get(match);
    if (kept && (kept.limit >= topK || kept.rows.length < kept.limit)) {
      answered.delete(match);
      answered.set(match, kept);
      return kept.rows.slice(0, topK);
    }
    const rows = search.all(match, topK) as Row[];
    if (queryCache > 0) {
      answered.delete(match);
      answered.set(match, { limit: topK, rows });
      if (answered.size > queryCache) answered.delete(answered.keys().next().value!);
    }
    return rows;
  };
  // Page images by path, least recently used dropped past `imageCacheBytes` (the pages of a corpus
  // come back across rollouts, evaluations and baselines).
  const images = new Map<string, { bytes: Promise<Uint8Array>; size: number }>();
  let imageBytes = 0;
  const forget = (path: string) => {
    const entry = images.get(path);
    if (!entry) return;
    images.delete(path);
    imageBytes -= entry.size;
  };
  const imageOf = (path: string) => {
    const kept = images.get(path);
    if (kept) {
      images.delete(path);
      images.set(path, kept);
      return kept.bytes;
    }
    const bytes = readFile(path).then((b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
    if (imageCacheBytes === 0) return bytes;
    const entry = { bytes, size: 0 };
    images.set(path, entry);
    bytes.then(
      (b) => {
        if (images.get(path) !== entry) return;
        entry.size = b.byteLength;
        imageBytes += b.byteLength;
        for (const [old] of images) {
          if (imageBytes <= imageCacheBytes || old === path) break;
          forget(old);
        }
        if (imageBytes > imageCacheBytes) forget(path);
      },
      () => {
        if (images.get(path) === entry) forget(path);
      },
    );
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
      if (closed)
        throw new ProviderCallError({
          port: 'searchEngine',
          provider: 'sqlite-fts',
          message: `search failed: the engine over '${dbPath}' was closed`,
          isRetryable: false,
        });
      const match = ftsQuery(String(query));
      if (match === null) return [];
      let rows: Row[];
      try {
        rows = rowsOf(match, options.topK);
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
      closed = true;
      answered.clear();
      images.clear();
      imageBytes = 0;
      db.close();
    },
  };
}
