import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProviderCallError } from '../../core/errors';
import { createRandom } from '../../core/random';
import { openSqlite } from '../../provider-utils/sqlite';
import { createSqliteSearchEngine, indexPages } from './sqlite-fts';

// The engine's memory of query results and page images: the same hits as the index gives, in the
// same order, for any mix of queries and topK; images kept up to a byte budget.

let dir = '';
const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'common'];
const pages = Array.from({ length: 40 }, (_, i) => ({
  basename: `p${i}.png`,
  // Ties in BM25 (pages of the same words) are ordered by id, so a LIMIT's rows are a prefix.
  text: `page ${i} ${WORDS[i % 4]} ${i % 3 === 0 ? 'common common' : 'common'}`,
}));
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-fts-cache-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('SQLite FTS5 search: what the engine keeps', () => {
  it('answers any sequence of queries and topK as an engine without a cache does', async () => {
    const db = join(dir, 'same.sqlite');
    await indexPages(db, pages);
    const cached = createSqliteSearchEngine({ dbPath: db, queryCache: 3 });
    const plain = createSqliteSearchEngine({ dbPath: db, queryCache: 0 });
    const random = createRandom(7);
    const queries = ['common', 'alpha common', 'beta', 'gamma delta', 'page 3', 'zebra', 'common page'];
    for (let k = 0; k < 300; k++) {
      const query = queries[random.nextInt(queries.length)]!;
      const topK = 1 + random.nextInt(45);
      const got = await cached.doSearch(query, { topK });
      expect(got, `${query} top ${topK}`).toEqual(await plain.doSearch(query, { topK }));
    }
    cached.close();
    plain.close();
  });

  it('answers a repeated query from memory: the index is taken as fixed while the engine is open', async () => {
    const db = join(dir, 'kept.sqlite');
    await indexPages(db, pages);
    const cached = createSqliteSearchEngine({ dbPath: db });
    const before = await cached.doSearch('alpha', { topK: 20 });
    const writer = openSqlite({ file: db });
    writer.prepare('UPDATE pages SET text = ? WHERE basename = ?').run('rewritten alpha', 'p0.png');
    writer.close();
    // Fewer rows than before: a prefix of what is kept, not another query.
    expect(await cached.doSearch('alpha', { topK: 3 })).toEqual(before.slice(0, 3));
    const fresh = createSqliteSearchEngine({ dbPath: db, queryCache: 0 });
    expect((await fresh.doSearch('alpha', { topK: 20 })).map((h) => h.text)).toContain('rewritten alpha');
    fresh.close();
    cached.close();
    await expect(cached.doSearch('alpha', { topK: 3 })).rejects.toSatisfy(
      (e: unknown) => ProviderCallError.isInstance(e) && /was closed/.test(e.message),
    );
  });

  it('keeps page images up to imageCacheBytes, the least recently used dropped first', async () => {
    const db = join(dir, 'images.sqlite');
    const files: Record<string, string> = {};
    for (const name of ['a', 'b']) {
      files[name] = join(dir, `${name}.png`);
      await sharp({ create: { width: 32, height: 24, channels: 3, background: '#ffffff' } })
        .png()
        .toFile(files[name]!);
    }
    await indexPages(db, [
      { basename: 'a.png', text: 'apple page', imagePath: files.a! },
      { basename: 'b.png', text: 'banana page', imagePath: files.b! },
    ]);
    const size = (await sharp(files.a!).toBuffer()).byteLength;
    const one = createSqliteSearchEngine({ dbPath: db, queryCache: 0, imageCacheBytes: size + 16 });
    const none = createSqliteSearchEngine({ dbPath: db, queryCache: 0, imageCacheBytes: 0 });
    const bytesA = (await one.doSearch('apple', { topK: 1 }))[0]!.image!.bytes;
    await none.doSearch('apple', { topK: 1 });
    await writeFile(files.a!, 'not the image any more');
    // Kept: the bytes read before; not kept: read again.
    expect((await one.doSearch('apple', { topK: 1 }))[0]!.image!.bytes).toEqual(bytesA);
    expect(new TextDecoder().decode((await none.doSearch('apple', { topK: 1 }))[0]!.image!.bytes)).toBe(
      'not the image any more',
    );
    // b's image pushes a's out of a budget of one image.
    await one.doSearch('banana', { topK: 1 });
    expect(new TextDecoder().decode((await one.doSearch('apple', { topK: 1 }))[0]!.image!.bytes)).toBe(
      'not the image any more',
    );
    one.close();
    none.close();
  });
});
