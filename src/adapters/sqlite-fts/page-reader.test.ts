import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigValidationError, InvalidArgumentError } from '../../core/errors';
import { sqliteFtsAdapter } from './adapter';
import { indexPageFolder, openPageReader } from './sqlite-fts';

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-page-reader-'));
  await sharp({ create: { width: 30, height: 20, channels: 3, background: '#fff' } })
    .png()
    .toFile(join(dir, 'deck_1.png'));
  await writeFile(join(dir, 'deck_1.txt'), 'Acme revenue 2019 was 4.5');
  await writeFile(join(dir, 'notes.txt'), 'a page of text alone');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the page reader', () => {
  it('reads a page by basename with its full text and image, null for a basename not indexed', async () => {
    const dbPath = join(dir, 'pages.sqlite');
    await indexPageFolder(dbPath, dir);
    const pages = openPageReader(dbPath);
    try {
      const page = await pages.page('deck_1.png');
      expect(page).toMatchObject({
        basename: 'deck_1.png',
        text: 'Acme revenue 2019 was 4.5',
        image: { mimeType: 'image/png', width: 30, height: 20 },
      });
      expect(page!.image!.bytes.subarray(1, 4)).toEqual(new Uint8Array([0x50, 0x4e, 0x47]));
      expect(await pages.page('notes.txt')).toEqual({ basename: 'notes.txt', text: 'a page of text alone' });
      expect(await pages.page('missing.png')).toBeNull();
    } finally {
      pages.close();
    }
  });

  it('refuses a file that is not a page index, naming dbPath', async () => {
    const other = join(dir, 'other.sqlite');
    await writeFile(other, '');
    expect(() => openPageReader(other)).toThrow(InvalidArgumentError);
    expect(() => openPageReader(other)).toThrow(/'.*other\.sqlite' is not a page index/);
  });
});

describe('the sqlite-fts adapter definition', () => {
  it('indexes the folder it names before searching it, and refuses a folder and a corpus together', async () => {
    const settings = sqliteFtsAdapter.settings.parse({ dbPath: join(dir, 'adapter.sqlite'), pagesDir: dir });
    const engine = await sqliteFtsAdapter.create(settings, { field: 'adapters.searchEngine' });
    try {
      expect((await engine.doSearch('acme revenue', { topK: 1 })).map((h) => h.basename)).toEqual([
        'deck_1.png',
      ]);
    } finally {
      (engine as unknown as { close(): void }).close();
    }
    const both = sqliteFtsAdapter.settings.parse({
      dbPath: join(dir, 'both.sqlite'),
      pagesDir: dir,
      corpusPath: join(dir, 'corpus.jsonl'),
    });
    await expect(
      sqliteFtsAdapter.create(both, { field: 'searcher.adapters.searchEngine' }),
    ).rejects.toSatisfy(
      (error: unknown) =>
        ConfigValidationError.isInstance(error) &&
        error.field === 'searcher.adapters.searchEngine.corpusPath',
    );
  });
});
