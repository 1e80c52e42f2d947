import { describe, expect, it } from 'vitest';
import { createMockSearchEngine, createRawImage, createRawImageOps } from './index';

describe('createMockSearchEngine', () => {
  it("behaves like the Search-R1 spec's keyword knowledge base, case-insensitive (docs/method.md#search-r1-mode)", async () => {
    const engine = createMockSearchEngine({
      knowledgeBase: { Paris: 'Paris is the capital of France.', 'machine learning': 'A field of AI.' },
    });
    const hits = await engine.doSearch('capital city PARIS', { topK: 3 });
    expect(hits).toEqual([
      { id: 'Paris.txt', basename: 'Paris.txt', score: 1, text: 'Paris is the capital of France.' },
    ]);
    // Only the keyword counts, not the words of its information or a part of the keyword.
    expect(await engine.doSearch('capital of Germany', { topK: 3 })).toEqual([]);
    expect(await engine.doSearch('machine', { topK: 3 })).toEqual([]);
    expect((await engine.doSearch('what is Machine Learning?', { topK: 3 })).map((h) => h.basename)).toEqual([
      'machine learning.txt',
    ]);
    expect(engine.calls).toHaveLength(4);
  });
  it('ranks pages by the number of query words they contain and honours topK', async () => {
    const engine = createMockSearchEngine({
      pages: [
        { basename: 'a.png', text: 'revenue' },
        { basename: 'b.png', text: 'acme revenue 2019' },
        { basename: 'c.png', text: 'acme' },
      ],
    });
    expect((await engine.doSearch('Acme revenue 2019', { topK: 2 })).map((h) => h.basename)).toEqual([
      'b.png',
      'a.png',
    ]);
    expect(await engine.doSearch('the of and', { topK: 2 })).toEqual([]);
  });
  it('names a page without a basename', () => {
    expect(() => createMockSearchEngine({ pages: [{ basename: '', text: 'x' }] })).toThrow(
      /pages\[0\]\.basename/,
    );
  });
});

describe('createRawImageOps', () => {
  it('crops exactly and enlarges by nearest neighbour', async () => {
    const image = createRawImage(4, 2, (x, y) => [x, y, 0, 255]);
    const ops = createRawImageOps();
    const crop = await ops.doCrop(image, [1, 0, 3, 1], { minOutputSide: 4 });
    expect([crop.width, crop.height]).toEqual([4, 2]);
    expect(Array.from(crop.bytes.subarray(0, 16))).toEqual([
      1, 0, 0, 255, 1, 0, 0, 255, 2, 0, 0, 255, 2, 0, 0, 255,
    ]);
  });
  it('refuses formats it cannot decode with a typed error', async () => {
    await expect(
      createRawImageOps().doCrop(
        { mimeType: 'image/png', width: 2, height: 2, bytes: new Uint8Array(4) },
        [0, 0, 1, 1],
      ),
    ).rejects.toMatchObject({ provider: 'raw-rgba', isRetryable: false });
  });
});
