import { describe, expect, it } from 'vitest';
import vectors from './__fixtures__/ndcg.json';
import { basename, ndcgAtK } from './ndcg';

describe('ndcgAtK against the reference', () => {
  const cases = vectors.cases as Array<{
    retrieved: string[];
    golden: string[];
    k: number | null;
    ndcg: number;
  }>;
  it('has all the reference cases', () => expect(cases.length).toBe(60));
  it.each(cases.map((c, index) => ({ ...c, index })))('case $index (k=$k)', (c) => {
    const actual = ndcgAtK(c.retrieved, c.golden, c.k);
    expect(Math.abs(actual - c.ndcg)).toBeLessThanOrEqual(1e-9 * Math.max(1, c.ndcg));
  });
});

describe('ndcgAtK', () => {
  it('compares basenames, so paths and URLs match their golden page', () => {
    expect(ndcgAtK(['/data/images/deck1_page3.png'], ['deck1_page3.png'])).toBe(1);
    expect(basename('https://x.test/a/deck2_page1.png?size=large')).toBe('deck2_page1.png');
  });
  it('counts a page once, at its first occurrence', () => {
    expect(ndcgAtK(['a.png', 'a.png'], ['a.png', 'b.png'], 2)).toBeCloseTo(1 / (1 + 1 / Math.log2(3)), 15);
  });
  it("offers the reference implementation's all-golden ideal DCG (docs/method.md#ndcg)", () => {
    const retrieved = ['a.png'];
    expect(ndcgAtK(retrieved, ['a.png', 'b.png'])).toBe(1);
    expect(ndcgAtK(retrieved, ['a.png', 'b.png'], null, { ideal: 'all-golden' })).toBeCloseTo(
      1 / (1 + 1 / Math.log2(3)),
      15,
    );
  });
  it('rejects a bad k naming the argument', () => {
    expect(() => ndcgAtK(['a.png'], ['a.png'], -1)).toThrow(/'k'/);
  });
});
