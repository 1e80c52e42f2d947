import { readFile } from 'node:fs/promises';
import type { PageImage } from '../../ports/types';
import { type PageRow, preparePageIndex } from './open-index';

/** One page of an index, as it was indexed: its full text, and its image when it has one that can be read. */
export interface IndexedPage {
  basename: string;
  text: string;
  image?: PageImage;
}

/** Reads pages of an index by basename (`page`), until `close`. */
export interface PageReader {
  /** The page named `basename`, or null when the index has none; an image that cannot be read is left out. */
  page(basename: string): Promise<IndexedPage | null>;
  /** Closes the index. */
  close(): void;
}

/**
 * Opens a page index read-only to read pages by basename (the curation verifier's golden pages):
 * the SQL on the index's `pages` table stays inside this adapter.
 */
export function openPageReader(dbPath: string): PageReader {
  const { db, statement: byBasename } = preparePageIndex(
    dbPath,
    'SELECT basename, text, image_path AS imagePath, mime, width, height FROM pages WHERE basename = ?',
  );
  return {
    async page(basename) {
      const row = byBasename.get(basename) as PageRow | undefined;
      if (!row) return null;
      const bytes = row.imagePath ? await readFile(row.imagePath).catch(() => null) : null;
      if (!bytes || !row.mime) return { basename: row.basename, text: row.text };
      const image: PageImage = {
        mimeType: row.mime,
        width: row.width ?? 0,
        height: row.height ?? 0,
        bytes: new Uint8Array(bytes),
      };
      return { basename: row.basename, text: row.text, image };
    },
    close: () => db.close(),
  };
}
