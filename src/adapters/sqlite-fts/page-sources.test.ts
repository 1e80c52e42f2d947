import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatasetValidationError, InvalidArgumentError } from '../../core/errors';
import { createSqliteSearchEngine, indexCorpusFile, indexPageFolder, inspectPageIndex } from './sqlite-fts';

// Issue 25: the corpora users have. A folder of text-only pages, Search-R1's JSONL corpus, an
// empty folder (refused, it indexed 0 pages and trained anyway), an index folder that does not exist yet.
let dir = '';
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-sources-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('page sources', () => {
  it('indexes a folder of text-only pages (each named by its file), beside image pages, into a folder made as needed', async () => {
    const folder = join(dir, 'text-pages');
    await mkdir(folder);
    await writeFile(join(folder, 'zorbel_1.txt'), 'Zorbel bridge length 412 metres');
    await writeFile(join(folder, 'zorbel_2.txt'), 'Zorbel bridge opened 1931');
    await writeFile(join(folder, 'notes.md'), 'not a page');
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#fff' } })
      .png()
      .toFile(join(folder, 'quarn_1.png'));
    await writeFile(join(folder, 'quarn_1.txt'), 'Quarn tower height 88 metres');
    const db = join(dir, 'not', 'yet', 'there', 'text.sqlite');
    expect(await indexPageFolder(db, folder)).toEqual({ pages: 3, rebuilt: true });
    const engine = createSqliteSearchEngine({ dbPath: db });
    expect((await engine.doSearch('Zorbel opened', { topK: 1 }))[0]).toMatchObject({
      basename: 'zorbel_2.txt',
      text: 'Zorbel bridge opened 1931',
    });
    expect((await engine.doSearch('Quarn tower', { topK: 1 }))[0]!.basename).toBe('quarn_1.png');
    engine.close();
    expect(inspectPageIndex(db, ['zorbel_1.txt', 'quarn_1.png', 'zorbel_9.txt', 'zorbel_9.txt'])).toEqual({
      pages: 3,
      missing: ['zorbel_9.txt'],
    });
  });

  it('refuses a folder that holds no pages, naming it, and writes no index', async () => {
    const empty = join(dir, 'empty');
    await mkdir(empty);
    await writeFile(join(empty, 'readme.md'), 'nothing here');
    const db = join(dir, 'empty.sqlite');
    await expect(indexPageFolder(db, empty)).rejects.toSatisfy(
      (e: unknown) =>
        InvalidArgumentError.isInstance(e) && e.argument === 'folder' && /holds no pages/.test(e.message),
    );
    await expect(stat(db)).rejects.toThrow();
  });

  it("indexes Search-R1's retrieval corpus ({id, contents} JSONL) by passage id", async () => {
    const db = join(dir, 'search-r1.sqlite');
    const corpus = join(import.meta.dirname, '__fixtures__', 'search-r1-corpus.jsonl');
    const result = await indexCorpusFile(db, corpus);
    expect(result.rebuilt).toBe(true);
    expect(result.pages).toBe(10);
    const engine = createSqliteSearchEngine({ dbPath: db });
    const hits = await engine.doSearch('Genentech lobbyist', { topK: 2 });
    expect(hits[0]).toMatchObject({ basename: '0' });
    expect(hits[0]!.text).toMatch(/^"Evan Morris"\n/);
    engine.close();
    expect(inspectPageIndex(db, ['0', '2']).missing).toEqual([]);
  });

  it('reads the DPR layout (id, title, text) and names a passage without an id or text by its line', async () => {
    const dpr = join(dir, 'dpr.jsonl');
    await writeFile(
      dpr,
      '{"id": 7, "title": "Quarn", "text": "a tower of 88 metres"}\n\n{"id": 8, "text": "a river"}\n',
    );
    const db = join(dir, 'dpr.sqlite');
    expect(await indexCorpusFile(db, dpr)).toEqual({ pages: 2, rebuilt: true });
    const engine = createSqliteSearchEngine({ dbPath: db });
    expect((await engine.doSearch('quarn', { topK: 1 }))[0]).toMatchObject({
      basename: '7',
      text: 'Quarn\na tower of 88 metres',
    });
    engine.close();
    const bad = join(dir, 'bad.jsonl');
    await writeFile(bad, '{"id": "a", "contents": "x"}\n{"contents": "no id"}\n');
    await expect(indexCorpusFile(join(dir, 'bad.sqlite'), bad)).rejects.toSatisfy(
      (e: unknown) => DatasetValidationError.isInstance(e) && e.field === 'id' && /line 2/.test(e.message),
    );
    await writeFile(bad, '{"id": "a", "contents": "x"}\n{"id": "b", "title": "t"}\n');
    await expect(indexCorpusFile(join(dir, 'bad.sqlite'), bad)).rejects.toSatisfy(
      (e: unknown) =>
        DatasetValidationError.isInstance(e) && e.field === 'contents' && /line 2/.test(e.message),
    );
    await writeFile(bad, '{"id": "a", "contents": "x"}\n\n{"id": "a", "contents": "y"}\n');
    await expect(indexCorpusFile(join(dir, 'bad.sqlite'), bad)).rejects.toSatisfy(
      (e: unknown) =>
        DatasetValidationError.isInstance(e) && e.field === 'basename' && /line 3/.test(e.message),
    );
    await writeFile(bad, '\n');
    await expect(indexCorpusFile(join(dir, 'bad.sqlite'), bad)).rejects.toThrow(/holds no passages/);
    await expect(indexCorpusFile(join(dir, 'bad.sqlite'), join(dir, 'nope.jsonl'))).rejects.toSatisfy(
      (e: unknown) => InvalidArgumentError.isInstance(e) && e.argument === 'corpusPath',
    );
  });
});
