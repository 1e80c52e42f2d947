import { describe, expect, it } from 'vitest';
import { ConfigValidationError } from '../../core/errors';
import { createRuleJudge } from '../rule-judge/index';
import { createExtractiveGenerator, extractAnswer } from './index';
import { structureOf } from './structure';

// The pages and questions of examples/own-data, which the extractive reader answers with no facts table.
const PAGES: Record<string, string> = {
  'acme_1.png': 'Acme Corp annual report 2019 overview of the year',
  'acme_2.png': 'Acme revenue 2019 was 4.5 billion dollars up from 3.9 billion',
  'acme_3.png': 'Acme employees 2019 headcount 12000 across 14 countries',
  'globex_1.png': 'Globex history founded 1989 in Springfield by Hank Scorpio',
  'globex_2.png': 'Globex products hammocks and doomsday devices sold worldwide',
  'initech_1.png': 'Initech TPS report cover sheets required from March 2020',
};
const QUESTIONS: Array<[string, string, string]> = [
  ['What was Acme revenue in 2019?', '4.5 billion dollars', 'acme_2.png'],
  ['How many employees did Acme have in 2019?', '12000', 'acme_3.png'],
  ['When was Globex founded?', '1989', 'globex_1.png'],
  ['Who founded Globex?', 'Hank Scorpio', 'globex_1.png'],
  ['From when are TPS report cover sheets required at Initech?', 'March 2020', 'initech_1.png'],
  ['What products does Globex sell?', 'hammocks and doomsday devices', 'globex_2.png'],
];

describe('the extractive generator', () => {
  it('answers each example question from its golden page alone, and the rule judge accepts every answer', async () => {
    const generator = createExtractiveGenerator();
    const judge = createRuleJudge();
    for (const [question, reference, page] of QUESTIONS) {
      const { answer } = await generator.doAnswer(question, [
        { kind: 'page', basename: page, text: PAGES[page]! },
      ]);
      const { score } = await judge.doScore(question, answer, reference);
      expect(score, `${question} -> ${answer}`).toBe(1);
    }
  });

  it('reads the page that shares the most of the question, wherever it was retrieved', async () => {
    const generator = createExtractiveGenerator();
    const evidence = ['acme_1.png', 'globex_2.png', 'acme_2.png'].map((basename) => ({
      kind: 'page' as const,
      basename,
      text: PAGES[basename]!,
    }));
    expect((await generator.doAnswer('What was Acme revenue in 2019?', evidence)).answer).toBe(
      '4.5 billion dollars',
    );
  });

  it('takes the clause after a colon, keeps "City, State" whole, and cuts at a comma before a lower-case clause', () => {
    expect(
      extractAnswer('What was the revenue of Acme?', ['Acme revenue: 4.5 billion dollars, up 12 percent']),
    ).toBe('4.5 billion dollars');
    expect(
      extractAnswer('Where are the headquarters of Initech?', ['Initech headquarters: Austin, Texas.']),
    ).toBe('Austin, Texas');
    expect(extractAnswer('What does Zorvia export?', ['Zorvia main export copper'])).toBe('copper');
    expect(
      extractAnswer('How long is the Zorbel bridge?', [
        'The Zorbel bridge. It spans 412 metres over the bay.',
      ]),
    ).toBe('spans 412 metres');
  });

  it('reads a page of `label: value` lines by its label and the heading above it', () => {
    const page = 'Zorvel\ncapital: Amberford\nfounded: 1437\nmain export: copper\nruler: Queen Ada\n';
    expect(extractAnswer('When was Zorvel founded?', [page])).toBe('1437');
    expect(extractAnswer('What is the main export of Zorvel?', [page])).toBe('copper');
    expect(extractAnswer('Who is the ruler of Zorvel?', [page])).toBe('Queen Ada');
    // No label word in the question: the value that fits its kind (a name of two capitals for who).
    expect(extractAnswer('Who reigns over Zorvel?', [page])).toBe('Queen Ada');
    // The earlier page first on a tie, as for sentences.
    const other = 'Quarin\nfounded: 1502\n';
    expect(extractAnswer('When was it founded?', [other, page])).toBe('1502');
  });

  it('reads a Markdown table by the row naming the subject and the column naming the attribute', () => {
    const table = [
      '# Countries',
      '| country | capital | founded |',
      '| --- | :---: | ---: |',
      '| Zorvel | Amberford | 1437 |',
      '| Quarin | Belltown | 1502 |',
    ].join('\n');
    expect(extractAnswer('What is the capital of Quarin?', [table])).toBe('Belltown');
    expect(extractAnswer('When was Zorvel founded?', [table])).toBe('1437');
    expect(extractAnswer('How old is Quarin? Founded when?', [table])).toBe('1502');
    // Without a header row, a row is read by its cells alone.
    expect(extractAnswer('Where is Zorvel?', ['| Zorvel | Amberford |\n| Quarin | Belltown |'])).toBe(
      'Amberford',
    );
  });

  it('reads tab-separated runs and a page of comma-separated values as tables', () => {
    const tsv = [
      'Countries of the west',
      'country\tcapital\tfounded',
      'Zorvel\tAmberford\t1437',
      'Quarin\tBelltown\t1502',
    ].join('\n');
    expect(extractAnswer('What is the capital of Quarin?', [tsv])).toBe('Belltown');
    expect(extractAnswer('When was Zorvel founded?', [tsv])).toBe('1437');
    const csv = [
      'country,capital,"motto, in full"',
      'Zorvel,Amberford,"Onward, ever"',
      'Quarin,Belltown,"Say ""yes"""',
    ].join('\n');
    expect(extractAnswer('What is the capital of Zorvel?', [csv])).toBe('Amberford');
    // Quoted cells keep their commas and doubled quotes.
    expect(structureOf(csv).facts.map((f) => f.value)).toEqual([
      'Zorvel',
      'Amberford',
      'Onward, ever',
      'Quarin',
      'Belltown',
      'Say "yes"',
    ]);
    expect(structureOf(csv).facts[0]).toEqual({
      label: 'country',
      subject: 'Amberford Onward, ever',
      value: 'Zorvel',
      position: 0,
    });
    // Prose with commas stays prose: a sentence is not a cell, nor a page of unequal lines a table.
    for (const text of [
      'Zorvel, a small country, lies in the west.\nQuarin, its neighbour, lies in the east of the continent, by the sea.',
      'Amberford is the capital of Zorvel, founded in 1437 by settlers who came over the mountains from the east, as the chronicles say.\nBelltown, Quarin',
      // Short sentences of one comma each: the lines end sentences.
      'Zorvel lies west, by the sea.\nQuarin lies east, in the hills.',
      // Lines that do not end sentences, but whose first is no header of short names.
      'The capital of Zorvel and its largest city, Amberford\nThe capital of Quarin, Belltown',
    ])
      expect(structureOf(text).facts).toEqual([]);
    // Two lines of pairs are two pairs, not a header and a row.
    expect(structureOf('Zorvel, Amberford\nQuarin, Belltown').facts).toEqual([]);
    // One tab-separated line is not a table.
    expect(structureOf('Zorvel\tAmberford').facts).toEqual([]);
  });

  it('reads a colon line with a long value, a row of many cells, as prose', () => {
    const { facts, prose } = structureOf(
      '2001: A Space Odyssey is a 1968 epic science fiction film produced and directed by Stanley Kubrick.\n' +
        `|${' x |'.repeat(40)}\n` +
        'capital: Amberford',
    );
    expect(prose.map((p) => p.text.slice(0, 4))).toEqual(['2001', '| x ']);
    expect(facts).toEqual([{ label: 'capital', subject: '', value: 'Amberford', position: 2 }]);
  });

  it('says the fallback when no text shares a word with the question, and caps the span', async () => {
    const generator = createExtractiveGenerator({ fallback: 'no idea', maxAnswerWords: 2 });
    expect((await generator.doAnswer('Who founded Globex?', [])).answer).toBe('no idea');
    expect(
      (
        await generator.doAnswer('Who founded Globex?', [
          { kind: 'page', basename: 'x', text: 'Zebras run fast' },
        ])
      ).answer,
    ).toBe('no idea');
    expect(
      (
        await generator.doAnswer('What does Globex sell?', [
          { kind: 'page', basename: 'x', text: 'Globex sells hammocks and doomsday devices' },
        ])
      ).answer,
    ).toBe('hammocks');
    expect(extractAnswer('the of and', ['the of and'])).toBeNull();
  });

  it('refuses settings it does not know, naming the field', () => {
    expect(() => createExtractiveGenerator({ maxAnswerWords: 0 })).toThrow(ConfigValidationError);
    expect(() => createExtractiveGenerator({ facts: {} } as never)).toThrow(/facts/);
  });
});
