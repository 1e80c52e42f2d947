import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRuleJudge, normaliseAnswer } from './index';

describe('createRuleJudge', () => {
  it('gives 1 for the reference, partial credit for near misses, 0 otherwise', async () => {
    const judge = createRuleJudge();
    expect((await judge.doScore('q', 'It was 4.5 billion dollars.', '4.5 billion dollars')).score).toBe(1);
    expect((await judge.doScore('q', 'The Eiffel Tower', 'eiffel tower')).score).toBe(1);
    expect(
      (await judge.doScore('q', '4.5 billion euros', '4.5 billion dollars')).score,
    ).toBeGreaterThanOrEqual(0.5);
    expect((await judge.doScore('q', '4.5 billion euros', '4.5 billion dollars')).score).toBeLessThan(1);
    expect((await judge.doScore('q', 'Berlin', '4.5 billion dollars')).score).toBe(0);
    expect((await judge.doScore('q', '7 billion dollars', '4.5 billion dollars')).score).toBe(0);
    expect(
      (await judge.doScore('q', '4.50 billion dollars total', '4.5 billion dollars')).score,
    ).toBeGreaterThan(0);
    expect((await judge.doScore('q', '', 'x')).score).toBe(0);
    expect(judge.calls).toHaveLength(8);
  });
  it('normalises case, punctuation, thousands separators and articles, keeping decimals', () => {
    expect(normaliseAnswer('The revenue: $4,500,000.5!')).toBe('revenue $4500000.5');
  });
});

describe('createRuleJudge: answers with numbers the reference does not have', () => {
  const score = async (answer: string, reference: string, question = 'When did it happen?') =>
    (await createRuleJudge().doScore(question, answer, reference)).score;
  const years = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  it('does not match a list, a range or alternatives that include the reference', async () => {
    expect(await score(years(1960, 2019).join(', '), '1989')).toBe(0);
    expect(await score(years(1960, 2019).join(' '), '1989')).toBe(0);
    expect(await score('1960-2019', '1989')).toBe(0);
    expect(await score('1989 or 1990', '1989')).toBe(0);
    expect(await score('1989/1990', '1989')).toBe(0);
    expect(await score('1989-90', '1989')).toBe(0);
    expect(await score('either 1988, 1989 or 1990', 'in 1989')).toBe(0);
    expect(await score('4.5 or 7 billion dollars', '4.5 billion dollars')).toBe(0);
    expect(await score('50% or 60%', '50%')).toBe(0);
    expect(await score('1,989 and 2,019', '1989')).toBe(0);
  });

  it('still matches the reference stated with thousands separators, repeats or words around it', async () => {
    expect(await score('1989', '1989')).toBe(1);
    expect(await score('It fell in 1989.', '1989')).toBe(1);
    expect(await score('1,989 people', '1989 people')).toBe(1);
    expect(await score('1989, yes 1989', '1989')).toBe(1);
    expect(await score('between 1960 and 2019', '1960 to 2019')).toBeGreaterThan(0);
    expect(await score('1960 and 2019', '1960 and 2019')).toBe(1);
  });

  it("answers that restate the question's numbers are near misses, never a match", async () => {
    const question = 'What was Acme revenue in 2019?';
    const restated = await score('In 2019 it was 4.5 billion dollars', '4.5 billion dollars', question);
    expect(restated).toBeGreaterThan(0);
    expect(restated).toBeLessThan(1);
    expect(await score('In 2018 it was 4.5 billion dollars', '4.5 billion dollars', question)).toBe(0);
  });

  it('property: a reference with a number N and an answer listing N and other numbers never scores 1', async () => {
    const judge = createRuleJudge();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 100_000 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 100_000 }), { minLength: 1, maxLength: 30 }),
        fc.constantFrom(', ', ' or ', '-', ' ', '/', ' and ', '; '),
        fc.constantFrom('', 'in ', 'about ', 'the year '),
        fc.nat(),
        async (n, others, separator, words, at) => {
          const extra = others.filter((o) => o !== n);
          fc.pre(extra.length > 0);
          const listed = [...extra];
          listed.splice(at % (listed.length + 1), 0, n);
          const answer = listed.map((v) => v.toLocaleString('en-US')).join(separator);
          const verdict = await judge.doScore('Which year?', `${words}${answer}`, `${words}${n}`);
          expect(verdict.score).toBeLessThan(1);
        },
      ),
      { numRuns: 300 },
    );
  });
});
