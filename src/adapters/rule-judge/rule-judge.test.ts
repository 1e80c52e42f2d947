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

  it.each([
    [years(1960, 2019).join(', '), '1989'],
    [years(1960, 2019).join(' '), '1989'],
    ['1960-2019', '1989'],
    ['1989 or 1990', '1989'],
    ['1989/1990', '1989'],
    ['1989-90', '1989'],
    ['either 1988, 1989 or 1990', 'in 1989'],
    ['4.5 or 7 billion dollars', '4.5 billion dollars'],
    ['50% or 60%', '50%'],
    ['1,989 and 2,019', '1989'],
  ])(
    'does not match a list, a range or alternatives that include the reference: %s for %s',
    async (answer, reference) => {
      expect(await score(answer, reference)).toBe(0);
    },
  );

  it.each([
    ['1989', '1989'],
    ['It fell in 1989.', '1989'],
    ['1,989 people', '1989 people'],
    ['1989, yes 1989', '1989'],
    ['1960 and 2019', '1960 and 2019'],
  ])(
    'still matches the reference stated with thousands separators, repeats or words around it: %s for %s',
    async (answer, reference) => {
      expect(await score(answer, reference)).toBe(1);
    },
  );

  it('gives a range stated in other words partial credit', async () => {
    expect(await score('between 1960 and 2019', '1960 to 2019')).toBeGreaterThan(0);
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

/** The gaming classes of docs/method.md#rule-judge, with the score each example gets (the table there). */
const GAMING_TABLE: ReadonlyArray<{ kind: string; answer: string; score: number }> = [
  { kind: 'negation', answer: 'not Paris', score: 0 },
  { kind: 'negation', answer: "It isn't Paris.", score: 0 },
  { kind: 'negation', answer: 'Paris is wrong', score: 0 },
  { kind: 'negation', answer: 'Paris? No.', score: 0 },
  { kind: 'alternatives', answer: 'Paris or London', score: 0 },
  { kind: 'alternatives', answer: 'Paris/London', score: 0 },
  { kind: 'alternatives', answer: 'either Paris or Lyon', score: 0 },
  { kind: 'list', answer: 'Paris, London', score: 0.5 },
  { kind: 'list', answer: 'Paris and London', score: 0.5 },
  { kind: 'list', answer: 'Paris, London, Rome, Lyon', score: 0.5 },
  { kind: 'hedge', answer: 'maybe Paris', score: 0.5 },
  { kind: 'hedge', answer: 'I think it is probably Paris', score: 0.5 },
  { kind: 'restated question', answer: 'Is the capital of France Paris?', score: 0 },
  { kind: 'honest', answer: 'Paris', score: 1 },
  { kind: 'honest', answer: 'The capital of France is Paris.', score: 1 },
  { kind: 'honest', answer: 'Paris, not London', score: 1 },
  { kind: 'honest', answer: 'Paris, in France', score: 1 },
];

describe('createRuleJudge: answers that try to talk the judge round (issue 41)', () => {
  it.each(GAMING_TABLE)('$kind: "$answer" scores $score for "Paris"', async ({ answer, score }) => {
    const question = answer.startsWith('Is ')
      ? 'Is the capital of France Paris?'
      : 'What is the capital of France?';
    expect((await createRuleJudge().doScore(question, answer, 'Paris')).score).toBe(score);
  });

  const WORDS = ['paris', 'london', 'lyon', 'acme', 'eiffel', 'tower', 'river', 'seine', 'berlin', 'quartz'];
  const name = fc
    .array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 3 })
    .map((w) => w.map((x) => x[0]!.toUpperCase() + x.slice(1)).join(' '));
  // The other candidate shares no word with the reference (a different place, not a rearrangement of it).
  const case_ = fc.tuple(name, name).filter(([r, o]) => {
    const words = new Set(r.toLowerCase().split(' '));
    return o
      .toLowerCase()
      .split(' ')
      .every((w) => !words.has(w));
  });
  const question = 'Which place was named in the report?';

  const gaming = (r: string, o: string) =>
    fc.constantFrom(
      `not ${r}`,
      `It is not ${r}.`,
      `It wasn't ${r}`,
      `${r} is wrong`,
      `never ${r}`,
      `${r}? No.`,
      `${r} or ${o}`,
      `${o} or ${r}`,
      `either ${r} or ${o}`,
      `${r}/${o}`,
      `${r}, ${o}`,
      `${o}, ${r}`,
      `${r}; ${o}`,
      `${r} and ${o}`,
      `maybe ${r}`,
      `perhaps ${r}`,
      `probably ${r}`,
      `I think ${r}`,
      `It might be ${r}`,
      `possibly ${r}, possibly ${o}`,
    );

  it('property: a negation, alternatives, a list of candidates or a hedge around the reference never scores 1', async () => {
    const judge = createRuleJudge();
    await fc.assert(
      fc.asyncProperty(
        case_.chain(([r, o]) => gaming(r, o).map((answer) => ({ r, answer }))),
        fc.constantFrom('', '  ', '.', '!'),
        async ({ r, answer }, tail) => {
          expect((await judge.doScore(question, `${answer}${tail}`, r)).score).toBeLessThan(1);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('property: an answer that restates a question holding the reference never scores 1', async () => {
    const judge = createRuleJudge();
    await fc.assert(
      fc.asyncProperty(
        case_,
        fc.constantFrom('Was it %?', 'Is the report about %?', 'Did % win the award in the report?'),
        async ([r], template) => {
          const q = template.replace('%', r);
          expect((await judge.doScore(q, q, r)).score).toBeLessThan(1);
          expect((await judge.doScore(q, q.replace('?', ''), r)).score).toBeLessThan(1);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('property: honest answers with extra correct words still score 1', async () => {
    const judge = createRuleJudge();
    await fc.assert(
      fc.asyncProperty(
        case_,
        fc.constantFrom(
          '%',
          'It was %.',
          'The answer is %',
          '%, not #',
          'Not #, but %',
          "It's %!",
          '%, as the report says',
          'The place named in the report was %.',
        ),
        async ([r, o], template) => {
          const answer = template.replace('%', r).replace('#', o);
          expect((await judge.doScore(question, answer, r)).score).toBe(1);
        },
      ),
      { numRuns: 300 },
    );
  });
});
