import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatasetValidationError, InvalidArgumentError } from '../../core/errors';
import { createSqliteSearchEngine, ftsQuery, indexPageFolder, indexPages } from './sqlite-fts';

const PAGES: Record<string, string> = {
  'acme_1.png': 'Acme Corp annual report 2019: overview of the year',
  'acme_2.png': 'Acme revenue 2019: 4.5 billion dollars, up 12 percent',
  'globex_1.png': 'Globex history: founded 1989 in Springfield',
  'initech_1.png': 'Initech headquarters: Austin, Texas. Revenue not disclosed.',
};

let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-fts-'));
  for (const [name, text] of Object.entries(PAGES)) {
    await sharp({ create: { width: 64, height: 48, channels: 3, background: '#ffffff' } })
      .png()
      .toFile(join(dir, name));
    await writeFile(join(dir, name.replace('.png', '.txt')), text);
  }
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SQLite FTS5 search', () => {
  it('indexes a folder once, reuses the index, and rebuilds when a page changes', async () => {
    const db = join(dir, 'index.sqlite');
    expect(await indexPageFolder(db, dir)).toEqual({ pages: 4, rebuilt: true });
    expect(await indexPageFolder(db, dir)).toEqual({ pages: 4, rebuilt: false });
    await writeFile(join(dir, 'globex_1.txt'), 'Globex history: founded 1989 in Springfield by Hank Scorpio');
    const later = new Date(Date.now() + 5000);
    await utimes(join(dir, 'globex_1.png'), later, later);
    expect(await indexPageFolder(db, dir)).toEqual({ pages: 4, rebuilt: true });
    const engine = createSqliteSearchEngine({ dbPath: db });
    expect((await engine.doSearch('scorpio', { topK: 3 })).map((h) => h.basename)).toEqual(['globex_1.png']);
    engine.close();
  });

  it('ranks by BM25 and returns basenames, text, scores and images', async () => {
    const db = join(dir, 'rank.sqlite');
    await indexPageFolder(db, dir);
    const engine = createSqliteSearchEngine({ dbPath: db });
    const hits = await engine.doSearch('Acme revenue 2019', { topK: 10 });
    expect(hits[0]!.basename).toBe('acme_2.png');
    expect(hits.map((h) => h.basename)).toContain('initech_1.png');
    expect(hits.every((h, i) => i === 0 || h.score <= hits[i - 1]!.score)).toBe(true);
    expect(hits[0]).toMatchObject({
      text: PAGES['acme_2.png'],
      image: { mimeType: 'image/png', width: 64, height: 48 },
    });
    expect(hits[0]!.image!.bytes.subarray(1, 4)).toEqual(new Uint8Array([0x50, 0x4e, 0x47]));
    expect(await engine.doSearch('Acme revenue 2019', { topK: 1 })).toHaveLength(1);
    expect(await engine.doSearch('zebra', { topK: 5 })).toEqual([]);
    engine.close();
  });

  it('searches the whole text but shows the shown text where a page has one, and rebuilds when it changes', async () => {
    const db = join(dir, 'shown.sqlite');
    const pages = [
      {
        basename: 'a.png',
        text: 'Acme people\nEmployees 2017: 12,000\nFounded: 1901',
        shownText: 'Acme people\nEmployees 2017: 12,000\n[small print at 36, 326, 300, 350]',
      },
      { basename: 'b.png', text: 'Globex history' },
    ];
    expect(await indexPages(db, pages)).toEqual({ pages: 2, rebuilt: true });
    const engine = createSqliteSearchEngine({ dbPath: db });
    // Found by its small print, shown without it.
    expect(await engine.doSearch('founded 1901', { topK: 1 })).toMatchObject([
      { basename: 'a.png', text: pages[0]!.shownText },
    ]);
    expect(await engine.doSearch('globex', { topK: 1 })).toMatchObject([
      { basename: 'b.png', text: 'Globex history' },
    ]);
    engine.close();
    expect(await indexPages(db, pages)).toEqual({ pages: 2, rebuilt: false });
    expect(await indexPages(db, [{ ...pages[0]!, shownText: 'Acme people' }, pages[1]!])).toEqual({
      pages: 2,
      rebuilt: true,
    });
    await expect(
      indexPages(db, [{ basename: 'c.png', text: 'x', shownText: 3 as unknown as string }]),
    ).rejects.toMatchObject({ row: 0, field: 'shownText' });

    const folder = join(dir, 'shown');
    await mkdir(folder, { recursive: true });
    for (const name of ['p1', 'p2']) {
      await sharp({ create: { width: 8, height: 8, channels: 3, background: '#ffffff' } })
        .png()
        .toFile(join(folder, `${name}.png`));
      await writeFile(join(folder, `${name}.txt`), `${name} revenue and small print`);
    }
    await writeFile(join(folder, 'p1.shown.txt'), 'p1 revenue [small print]');
    const folderDb = join(dir, 'shown-folder.sqlite');
    await indexPageFolder(folderDb, folder, { shownTextExtension: '.shown.txt' });
    const folderEngine = createSqliteSearchEngine({ dbPath: folderDb });
    const hits = await folderEngine.doSearch('small print', { topK: 2 });
    expect(Object.fromEntries(hits.map((h) => [h.basename, h.text]))).toEqual({
      'p1.png': 'p1 revenue [small print]',
      'p2.png': 'p2 revenue and small print',
    });
    folderEngine.close();
    await expect(indexPageFolder(folderDb, folder, { shownTextExtension: '.txt' })).rejects.toThrow(
      InvalidArgumentError,
    );
  });

  it('treats query text as words, never as FTS5 syntax', async () => {
    expect(ftsQuery('acme" OR NEAR(x y) *')).toBe('"acme" OR "or" OR "near" OR "x" OR "y"');
    expect(ftsQuery('  ?! ')).toBeNull();
    expect(ftsQuery('İstanbul Zu\u0308rich')).toBe('"istanbul" OR "zurich"');
    const db = join(dir, 'syntax.sqlite');
    await indexPageFolder(db, dir);
    const engine = createSqliteSearchEngine({ dbPath: db, includeImages: false, maxTextChars: 10 });
    const hits = await engine.doSearch('"Globex" AND (founded', { topK: 2 });
    expect(hits[0]).toMatchObject({ basename: 'globex_1.png', text: 'Globex his' });
    expect(hits[0]!.image).toBeUndefined();
    expect(await engine.doSearch('"()*', { topK: 2 })).toEqual([]);
    engine.close();
  });

  it('indexes page records without images, and names bad rows and missing files', async () => {
    const db = join(dir, 'records.sqlite');
    expect(
      await indexPages(db, [
        { basename: 'a.txt', text: 'alpha beta' },
        { basename: 'b.txt', text: 'gamma' },
      ]),
    ).toEqual({ pages: 2, rebuilt: true });
    const engine = createSqliteSearchEngine({ dbPath: db });
    expect(await engine.doSearch('gamma', { topK: 1 })).toEqual([
      expect.objectContaining({ basename: 'b.txt', text: 'gamma' }),
    ]);
    engine.close();
    await expect(
      indexPages(db, [
        { basename: 'a', text: 'x' },
        { basename: 'a', text: 'y' },
      ]),
    ).rejects.toSatisfy(
      (e: unknown) => DatasetValidationError.isInstance(e) && e.row === 1 && e.field === 'basename',
    );
    await expect(
      indexPages(db, [{ basename: 'a', text: 'x', imagePath: join(dir, 'nope.png') }]),
    ).rejects.toThrow(/row 0, field 'imagePath'/);
    await writeFile(
      join(dir, 'orphan.png'),
      await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } })
        .png()
        .toBuffer(),
    );
    await expect(indexPageFolder(join(dir, 'orphan.sqlite'), dir)).rejects.toThrow(
      /'orphan.png' has no text file 'orphan.txt'/,
    );
    await rm(join(dir, 'orphan.png'));
    expect(() => createSqliteSearchEngine({ dbPath: join(dir, 'missing.sqlite') })).toThrow(
      InvalidArgumentError,
    );
    const open = createSqliteSearchEngine({ dbPath: db });
    await expect(open.doSearch('x', { topK: 0 })).rejects.toThrow(/topK/);
    const controller = new AbortController();
    controller.abort();
    await expect(open.doSearch('x', { topK: 1, signal: controller.signal })).rejects.toThrow(/aborted/i);
    open.close();
  });

  it('refuses basenames that are paths, naming the row', async () => {
    const db = join(dir, 'paths.sqlite');
    for (const basename of ['../../etc/passwd', 'deck/1.png', 'deck\\1.png', '..', 'a\u0000b']) {
      await expect(
        indexPages(db, [
          { basename: 'ok.png', text: 'x' },
          { basename, text: 'y' },
        ]),
      ).rejects.toSatisfy(
        (e: unknown) => DatasetValidationError.isInstance(e) && e.row === 1 && e.field === 'basename',
      );
    }
  });

  it('does not follow a text file or an image linked out of the folder', async () => {
    const folder = join(dir, 'linked');
    await mkdir(folder);
    const outside = join(dir, 'secret.txt');
    await writeFile(outside, 'the secret outside the folder');
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    await writeFile(join(folder, 'leak_1.png'), png);
    await symlink(outside, join(folder, 'leak_1.txt'));
    await expect(indexPageFolder(join(dir, 'linked.sqlite'), folder)).rejects.toSatisfy(
      (e: unknown) =>
        DatasetValidationError.isInstance(e) &&
        e.row === 0 &&
        e.field === 'text' &&
        /outside/.test(e.message),
    );
    await rm(join(folder, 'leak_1.txt'));
    await writeFile(join(folder, 'leak_1.txt'), 'a page');
    await writeFile(join(dir, 'outside.png'), png);
    await symlink(join(dir, 'outside.png'), join(folder, 'leak_2.png'));
    await writeFile(join(folder, 'leak_2.txt'), 'another page');
    await expect(indexPageFolder(join(dir, 'linked.sqlite'), folder)).rejects.toSatisfy(
      (e: unknown) => DatasetValidationError.isInstance(e) && e.row === 1 && e.field === 'imagePath',
    );
  });

  it('refuses text that is not UTF-8 instead of replacing it, naming the row', async () => {
    const folder = join(dir, 'latin1');
    await mkdir(folder);
    await writeFile(
      join(folder, 'p_1.png'),
      await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } })
        .png()
        .toBuffer(),
    );
    await writeFile(join(folder, 'p_1.txt'), Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    await expect(indexPageFolder(join(dir, 'latin1.sqlite'), folder)).rejects.toSatisfy(
      (e: unknown) =>
        DatasetValidationError.isInstance(e) && e.row === 0 && e.field === 'text' && /UTF-8/.test(e.message),
    );
    await expect(
      indexPages(join(dir, 'latin1.sqlite'), [{ basename: 'a', text: 'lone \ud800 surrogate' }]),
    ).rejects.toSatisfy(
      (e: unknown) => DatasetValidationError.isInstance(e) && e.row === 0 && e.field === 'text',
    );
  });

  it('types a dbPath that is not a database and pages that are not an array', async () => {
    const notDb = join(dir, 'not-a-db.sqlite');
    await writeFile(notDb, 'this is not a SQLite database, just some text long enough to have a header');
    await expect(indexPages(notDb, [{ basename: 'a', text: 'x' }])).rejects.toSatisfy(
      (e: unknown) => InvalidArgumentError.isInstance(e) && e.argument === 'dbPath',
    );
    expect(() => createSqliteSearchEngine({ dbPath: notDb })).toThrow(
      expect.objectContaining({ argument: 'dbPath' }),
    );
    await expect(indexPages(join(dir, 'x.sqlite'), { basename: 'a', text: 'x' } as never)).rejects.toSatisfy(
      (e: unknown) => InvalidArgumentError.isInstance(e) && e.argument === 'pages',
    );
    await expect(indexPages(join(dir, 'x.sqlite'), null as never)).rejects.toSatisfy(
      (e: unknown) => InvalidArgumentError.isInstance(e) && e.argument === 'pages',
    );
  });
});
