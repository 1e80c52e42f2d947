import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import vectors from './__fixtures__/sequence_matcher.json';
import { sequenceMatcherRatio } from './sequence-matcher';

describe('sequenceMatcherRatio against Python difflib', () => {
  const cases = vectors.cases as Array<{ a: string; b: string; ratio: number }>;
  it('has all the reference cases, some long enough for autojunk', () => {
    expect(cases.length).toBe(80);
    expect(cases.some((c) => Array.from(c.b).length >= 200 || Array.from(c.a).length >= 200)).toBe(true);
  });
  it.each(cases.map((c, index) => ({ ...c, index, la: c.a.length, lb: c.b.length })))(
    'case $index (|a|=$la, |b|=$lb)',
    (c) => {
      const ratio = sequenceMatcherRatio(c.a, c.b);
      expect(Math.abs(ratio - c.ratio)).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(c.ratio)));
    },
  );
});

describe('sequenceMatcherRatio', () => {
  it('is 1 for two empty strings and 0 against an empty string', () => {
    expect(sequenceMatcherRatio('', '')).toBe(1);
    expect(sequenceMatcherRatio('abc', '')).toBe(0);
  });
  it('counts code points, not UTF-16 units (astral characters)', () => {
    // Python: SequenceMatcher(None, "a😀b", "a😀c").ratio() == 2*2/6
    expect(sequenceMatcherRatio('a😀b', 'a😀c')).toBeCloseTo(4 / 6, 15);
  });
  it('matches difflib where autojunk purges a popular character of b', () => {
    // Values printed by CPython 3.11's difflib. "x" is popular in the 200-long b, so no match
    // can start on it, yet the extension pass still grows the empty match at the start.
    expect(sequenceMatcherRatio('x'.repeat(10), 'x'.repeat(200))).toBe(0.09523809523809523);
    expect(sequenceMatcherRatio(`ab${'x'.repeat(10)}`, `ab${'x'.repeat(200)}`)).toBe(0.11214953271028037);
  });
  it('property: stays in [0, 1] and is 1 for identical short strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), fc.string({ maxLength: 60 }), (a, b) => {
        const r = sequenceMatcherRatio(a, b);
        expect(r).toBeGreaterThanOrEqual(0);
        expect(r).toBeLessThanOrEqual(1);
        expect(sequenceMatcherRatio(a, a)).toBe(1);
      }),
      { numRuns: 1000 },
    );
  });
});
