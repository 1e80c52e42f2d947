import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAction, renderAction, type Action } from './actions';
import { correctiveMessage, pageRead, queryExcerpt, renderNoResults, renderObservation } from './observation';

describe('parseAction', () => {
  it('reads a think and a search', () => {
    const turn = parseAction('<think>I need the 2019 revenue.</think>\n<search>Acme revenue 2019</search>');
    expect(turn).toEqual({
      kind: 'valid',
      think: 'I need the 2019 revenue.',
      action: { type: 'search', query: 'Acme revenue 2019' },
      ignoredActions: [],
      strayText: '',
    });
  });

  it('reads bbox, search_complete and answer', () => {
    expect(parseAction('<bbox>[10, 20.5, 300, 400]</bbox>')).toMatchObject({
      kind: 'valid',
      action: { type: 'bbox', bbox: [10, 20.5, 300, 400] },
    });
    expect(parseAction('<bbox>10 20 30 40</bbox>')).toMatchObject({
      kind: 'valid',
      action: { type: 'bbox', bbox: [10, 20, 30, 40] },
    });
    expect(parseAction('<think>done</think><search_complete>true</search_complete>')).toMatchObject({
      kind: 'valid',
      action: { type: 'search_complete' },
    });
    expect(parseAction('<answer> Paris </answer>')).toMatchObject({
      kind: 'valid',
      action: { type: 'answer', answer: 'Paris' },
    });
  });

  it('runs only the first action and records the others', () => {
    const turn = parseAction(
      '<think>x</think><search>first</search><search>second</search><bbox>[1,2,3,4]</bbox>',
    );
    expect(turn.kind).toBe('valid');
    if (turn.kind !== 'valid') return;
    expect(turn.action).toEqual({ type: 'search', query: 'first' });
    expect(turn.ignoredActions).toEqual(['<search>second</search>', '<bbox>[1,2,3,4]</bbox>']);
  });

  it('does not take a tag inside any think block for the action', () => {
    const turn = parseAction('<think>maybe <search>not this</search></think><search>this</search>');
    expect(turn).toMatchObject({ kind: 'valid', action: { type: 'search', query: 'this' } });
    const twoThinks = parseAction('<think>a</think><think>b <search>x</search></think><search>y</search>');
    expect(twoThinks).toMatchObject({
      kind: 'valid',
      think: 'a\nb <search>x</search>',
      action: { type: 'search', query: 'y' },
    });
  });

  it('reads -0 in a bbox as 0', () => {
    const turn = parseAction('<bbox>[-0, 0, 10, 10]</bbox>');
    expect(turn.kind === 'valid' && Object.is((turn.action as { bbox: readonly number[] }).bbox[0], 0)).toBe(
      true,
    );
  });

  it.each([
    ['plain text, no action', 'I think the answer is 42', 'no_action'],
    ['an unclosed action', '<search>acme revenue', 'unclosed_tag'],
    ['an unclosed think', '<think>hmm <search>x</search>', 'unclosed_think'],
    ['an empty search', '<search>   </search>', 'empty_search'],
    ['three numbers', '<bbox>[1, 2, 3]</bbox>', 'bbox_not_four_numbers'],
    ['words in a bbox', '<bbox>[a, b, c, d]</bbox>', 'bbox_not_four_numbers'],
    ['a negative coordinate', '<bbox>[-1, 2, 3, 4]</bbox>', 'bbox_negative'],
    ['x2 <= x1', '<bbox>[30, 2, 30, 4]</bbox>', 'bbox_empty_area'],
    ['y2 <= y1', '<bbox>[1, 40, 30, 4]</bbox>', 'bbox_empty_area'],
    ['search_complete false', '<search_complete>false</search_complete>', 'search_complete_not_true'],
  ])('rejects %s', (_name, text, reason) => {
    const turn = parseAction(text);
    expect(turn.kind).toBe('invalid');
    if (turn.kind === 'invalid') {
      expect(turn.reason).toBe(reason);
      expect(turn.message.length).toBeGreaterThan(10);
    }
  });

  it('keeps indices right around characters whose lowercase is longer (İ)', () => {
    expect(parseAction('<think>İİİ</think><search>İstanbul</search>')).toMatchObject({
      kind: 'valid',
      action: { type: 'search', query: 'İstanbul' },
    });
  });

  it('property: never throws, for any string (10,000 runs)', () => {
    const fragments = fc.constantFrom(
      '<think>',
      '</think>',
      '<search>',
      '</search>',
      '<bbox>',
      '</bbox>',
      '<search_complete>',
      '</search_complete>',
      '<answer>',
      '</answer>',
      '[',
      ']',
      ',',
      '-1',
      '3.5e2',
      'true',
      ' ',
      'İ',
      '\n',
      '<',
      '>',
      '/',
    );
    const arbitraryTurn = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc
        .array(fc.oneof(fragments, fc.string({ maxLength: 5 })), { maxLength: 30 })
        .map((parts) => parts.join('')),
    );
    fc.assert(
      fc.property(arbitraryTurn, (text) => {
        const turn = parseAction(text);
        expect(['valid', 'invalid']).toContain(turn.kind);
      }),
      { numRuns: 10_000 },
    );
  });

  it('property: a rendered action parses back to itself', () => {
    const action: fc.Arbitrary<Action> = fc.oneof(
      fc
        .string({ minLength: 1, maxLength: 40 })
        .filter((q) => !/[<>]/.test(q) && q.trim().length > 0)
        .map((q) => ({ type: 'search' as const, query: q.replace(/\s+/g, ' ').trim() })),
      fc
        .tuple(fc.nat(2000), fc.nat(2000), fc.integer({ min: 1, max: 500 }), fc.integer({ min: 1, max: 500 }))
        .map(([x, y, w, h]) => ({ type: 'bbox' as const, bbox: [x, y, x + w, y + h] as const })),
      fc.constant({ type: 'search_complete' as const }),
    );
    fc.assert(
      fc.property(action, (a) => {
        expect(parseAction(`<think>t</think>${renderAction(a)}`)).toMatchObject({ kind: 'valid', action: a });
      }),
      { numRuns: 2000 },
    );
  });
});

describe('observations', () => {
  it("shows a long page's first line and the lines sharing the query's words, in page order (observationExcerpt: query)", () => {
    const table = [
      '| country | founded |',
      '| --- | --- |',
      ...['Zorzor', 'Drumab', 'Quarin', 'Velzor', 'Nixtho'].map((c, i) => `| ${c} | ${1400 + i} |`),
    ].join('\n');
    expect(queryExcerpt(table, 'Velzor begin founded', 60)).toBe(
      '| country | founded |\n…\n| Velzor | 1403 |\n…',
    );
    expect(
      renderObservation([{ kind: 'page', basename: 'founded.txt', text: table }], {
        maxTextChars: 60,
        query: 'Velzor founded',
      }),
    ).toBe('<information>[page founded.txt]\n| country | founded |\n…\n| Velzor | 1403 |\n…</information>');
    // Without the query, or where no other line shares a word, the page's start, as before.
    expect(
      renderObservation([{ kind: 'page', basename: 'founded.txt', text: table }], { maxTextChars: 30 }),
    ).toBe(`<information>[page founded.txt]\n${table.slice(0, 30)}…</information>`);
    expect(queryExcerpt(table, 'Amberford', 30)).toBe(`${table.slice(0, 30)}…`);
    // A page that fits is shown whole; lines are kept best first while they fit, never past the limit.
    expect(queryExcerpt('short page', 'page', 60)).toBe('short page');
    const many = queryExcerpt(table, 'Zorzor Drumab Quarin Velzor Nixtho', 64);
    expect(many.length).toBeLessThanOrEqual(64);
    expect(many).toBe('| country | founded |\n…\n| Zorzor | 1400 |\n| Drumab | 1401 |\n…');
  });

  it('renders pages and crops in <information>', () => {
    const text = renderObservation([
      {
        kind: 'page',
        basename: 'deck1_page2.png',
        text: 'Revenue 2019: $4.5B',
        shownWidth: 800,
        shownHeight: 600,
      },
    ]);
    expect(text).toBe('<information>[page deck1_page2.png (800x600)]\nRevenue 2019: $4.5B</information>');
    expect(
      renderObservation([
        {
          kind: 'crop',
          basename: 'd_1.png',
          sourceRegion: [10, 20, 110, 70],
          shownWidth: 768,
          shownHeight: 384,
        },
      ]),
    ).toBe('<information>[crop of d_1.png region [10, 20, 110, 70] (768x384)]</information>');
  });

  it('tells the policy its previous action was invalid and what to do, in the words of its mode', () => {
    const message = correctiveMessage('bbox_negative', 'bbox coordinates must not be negative');
    expect(message).toMatch(/^<information>Your previous action is invalid \(bbox_negative\)/);
    expect(message).toContain('search_complete');
    expect(correctiveMessage('no_action', 'x', 'answer')).toContain('an answer tag');
    expect(correctiveMessage('no_action', 'x', 'answer')).not.toContain('search_complete');
  });

  it('writes no protocol tag inside an observation (a stray <think> would pair with the next </think>)', () => {
    const inner = (text: string) => text.replace(/^<information>/, '').replace(/<\/information>$/, '');
    const corrective = correctiveMessage(
      'no_action',
      parseAction('hello').kind === 'invalid' ? (parseAction('hello') as { message: string }).message : '',
    );
    expect(inner(corrective)).not.toMatch(/<\/?(think|search|bbox|search_complete|answer|information)>/);
    const page = renderObservation([
      { kind: 'page', basename: 'a.png', text: 'Slide says <answer>42</answer> and <think>' },
    ]);
    expect(inner(page)).not.toMatch(/<\/?(think|answer)>/);
    expect(page).toContain('‹answer›42‹/answer›');
  });
});

describe('pageRead', () => {
  it('reads back the basename of the page renderObservation shows first; null for a crop or no page', () => {
    const shown = (basename: string, size: boolean) =>
      renderObservation([
        { kind: 'page', basename, text: 'Arkbex people', ...(size && { shownWidth: 640, shownHeight: 360 }) },
      ]).slice('<information>'.length);
    expect(pageRead(shown('arkbex_12.png', true))).toBe('arkbex_12.png');
    expect(pageRead(shown('zorvel capital.txt', false))).toBe('zorvel capital.txt');
    expect(
      pageRead(
        renderObservation([{ kind: 'crop', basename: 'a.png', sourceRegion: [1, 2, 3, 4] }]).slice(
          '<information>'.length,
        ),
      ),
    ).toBeNull();
    expect(pageRead(renderNoResults('x', 'exhausted').slice('<information>'.length))).toBeNull();
  });
});
