import { describe, expect, it } from 'vitest';
import { demonstrationQueries } from './demonstrator';

describe('demonstrationQueries', () => {
  it("tries the question's own words first: content words, the whole question, then each half", () => {
    expect(demonstrationQueries('What is the capital of Zorvel?')).toEqual([
      'capital Zorvel',
      'What is the capital of Zorvel',
      'capital',
      'Zorvel',
    ]);
  });

  it("adds the golden page name's words, written as the question writes those it has, for a question worded unlike its page", () => {
    const queries = demonstrationQueries('Which goods does Zorvel sell abroad?', ['zorvel_export.txt']);
    expect(queries.at(-1)).toBe('Zorvel export');
    expect(queries).toHaveLength(5);
  });

  it('adds nothing where the golden name repeats a query already tried, or names nothing the question has (an id)', () => {
    expect(demonstrationQueries('What is the capital of Zorvel?', ['zorvel_capital.txt'])).toEqual(
      demonstrationQueries('What is the capital of Zorvel?'),
    );
    expect(demonstrationQueries('Who founded the company on the slide?', ['deck12_3.png'])).toEqual(
      demonstrationQueries('Who founded the company on the slide?'),
    );
    // A page number is an id too: the question cannot give it.
    expect(demonstrationQueries('When was Acme founded?', ['acme_3.png'])).toEqual(
      demonstrationQueries('When was Acme founded?'),
    );
  });
});
