import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseAction, renderAction } from './actions';
import {
  boxToLocationBins,
  LOCATION_BINS,
  LOCATION_TOKENS,
  locationBinsToBox,
  locationText,
  parseLocationBins,
  parseRegionMarks,
  normaliseRegionName,
  regionMarkText,
} from './location';
import { createVocabularyTokenizer } from './tokenizer';

describe('location tokens', () => {
  it('quantize a box to the smallest grid box that covers it, in any image size', () => {
    expect(boxToLocationBins([36, 326, 300, 350], 640, 360)).toEqual([1, 28, 15, 32]);
    expect(locationText([36, 326, 300, 350], 640, 360)).toBe('<x1_1><y1_28><x2_15><y2_32>');
    // The same place on a slide shown at half size has the same tokens.
    expect(locationText([18, 163, 150, 175], 320, 180)).toBe('<x1_1><y1_28><x2_15><y2_32>');
    fc.assert(
      fc.property(
        fc.integer({ min: 16, max: 2000 }),
        fc.integer({ min: 16, max: 2000 }),
        fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })),
        fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })),
        (width, height, [a, b], [c, d]) => {
          const box = [
            Math.min(a, b) * width,
            Math.min(c, d) * height,
            Math.max(a, b) * width,
            Math.max(c, d) * height,
          ] as const;
          const back = locationBinsToBox(boxToLocationBins(box, width, height), width, height);
          const eps = 1e-6;
          return (
            back[0] <= box[0] + eps &&
            back[1] <= box[1] + eps &&
            back[2] >= box[2] - eps &&
            back[3] >= box[3] - eps &&
            back.every((v) => v >= 0) &&
            back[2] <= width + eps &&
            back[3] <= height + eps
          );
        },
      ),
    );
  });

  /** The reason a `<bbox>` body is refused, or 'valid'. */
  const reason = (body: string) => {
    const turn = parseAction(`<bbox>${body}</bbox>`);
    return turn.kind === 'invalid' ? turn.reason : 'valid';
  };

  it('parse as a bbox in location units, with or without brackets and separators, or as the page marks a region (its name not read); plain numbers stay pixels', () => {
    for (const body of [
      '<x1_1><y1_28><x2_15><y2_32>',
      '[<x1_1>, <y1_28>, <x2_15>, <y2_32>]',
      ' <x1_1> <y1_28> <x2_15> <y2_32> ',
      'footnote at <x1_1><y1_28><x2_15><y2_32>',
      ' contact line at <x1_1><y1_28><x2_15><y2_32> ',
    ]) {
      const turn = parseAction(`<bbox>${body}</bbox>`);
      expect(turn.kind === 'valid' && turn.action).toEqual({
        type: 'bbox',
        bbox: [1, 28, 15, 32],
        unit: 'location',
      });
    }
    const pixels = parseAction('<bbox>[36, 326, 300, 350]</bbox>');
    expect(pixels.kind === 'valid' && pixels.action).toEqual({ type: 'bbox', bbox: [36, 326, 300, 350] });
    const action = { type: 'bbox', bbox: [1, 28, 15, 32], unit: 'location' } as const;
    expect(renderAction(action)).toBe('<bbox><x1_1><y1_28><x2_15><y2_32></bbox>');
    const round = parseAction(renderAction(action));
    expect(round.kind === 'valid' && round.action).toEqual(action);
  });

  it('refuse three tokens, a bin past the grid, a mix with numbers, an empty box and a mark without its box or its "at", with the reason', () => {
    expect(reason('footnote at <x1_1><y1_28>')).toBe('bbox_not_four_numbers');
    expect(reason('footnote <x1_1><y1_28><x2_15><y2_32>')).toBe('bbox_not_four_numbers');
    expect(reason('footnote at <x1_15><y1_28><x2_1><y2_32>')).toBe('bbox_empty_area');
    expect(reason('<x1_1><y1_28><x2_15>')).toBe('bbox_not_four_numbers');
    expect(reason(`<x1_1><y1_28><x2_15><y2_${LOCATION_BINS + 1}>`)).toBe('bbox_not_four_numbers');
    expect(reason('<x1_1>, 28, <x2_15>, <y2_32>')).toBe('bbox_not_four_numbers');
    // Each coordinate in its own place.
    expect(reason('<y1_28><x1_1><x2_15><y2_32>')).toBe('bbox_not_four_numbers');
    expect(reason('<x1_15><y1_28><x2_15><y2_32>')).toBe('bbox_empty_area');
    expect(parseLocationBins('1, 2, 3, 4')).toBeNull();
    const invalid = parseAction('<bbox><x1_1><y1_2></bbox>');
    expect(invalid.kind === 'invalid' && invalid.message).toContain(`k from 0 to ${LOCATION_BINS}`);
  });

  it("mark a page's regions by name, and a bbox may name one instead of writing its box", () => {
    const text = `Acme\n${regionMarkText('contact line', [2, 20, 27, 25])}\n[footnote at <x1_3><y1_9><x2_3><y2_12>]\n[source at <x1_40><y1_1><x2_41><y2_2>]\n[note at 1, 2, 3, 4]`;
    expect(text).toContain('[contact line at <x1_2><y1_20><x2_27><y2_25>]');
    // An empty box and a bin past the grid are not marks; numbers are not location tokens.
    expect(parseRegionMarks(text)).toEqual([{ label: 'contact line', bins: [2, 20, 27, 25] }]);
    for (const [body, region] of [
      ['footnote', 'footnote'],
      [' Contact  Line ', 'contact line'],
      ['date-line', 'date-line'],
    ] as const) {
      const turn = parseAction(`<bbox>${body}</bbox>`);
      expect(turn.kind === 'valid' && turn.action).toEqual({ type: 'bbox', region });
      expect(renderAction({ type: 'bbox', region })).toBe(`<bbox>${region}</bbox>`);
    }
    // Not a name: digits, brackets or a mix with numbers stay the numbers' problem.
    for (const body of ['footnote 2', '[footnote]', '36, 326, footnote', '', 'a'.repeat(49)]) {
      const turn = parseAction(`<bbox>${body}</bbox>`);
      expect(turn.kind === 'invalid' && turn.reason).toBe('bbox_not_four_numbers');
      expect(turn.kind === 'invalid' && turn.message).toContain('or the name of a region the page marks');
    }
    expect(normaliseRegionName('Footnote')).toBe('footnote');
  });

  it('normalise marks and names alike, refuse a mark they could not name, and parse long bodies in linear time', () => {
    // NFC, case, runs of spaces; combining marks are letters' parts.
    const decomposed = 'cafe\u0301 line';
    expect(
      parseRegionMarks(
        `[${decomposed}  at <x1_1><y1_1><x2_2><y2_2>] [Date   Line at <x1_1><y1_1><x2_2><y2_2>]`,
      ),
    ).toEqual([
      { label: 'caf\u00e9 line', bins: [1, 1, 2, 2] },
      { label: 'date line', bins: [1, 1, 2, 2] },
    ]);
    expect(normaliseRegionName(` CAFE\u0301   Line `)).toBe('caf\u00e9 line');
    expect(parseRegionMarks(`[${'a'.repeat(49)} at <x1_1><y1_1><x2_2><y2_2>]`)).toEqual([]);
    expect(() => regionMarkText('note 2', [1, 1, 2, 2])).toThrow(/label.*not a region name/);
    expect(() => regionMarkText('note', [3, 1, 2, 2])).toThrow(/bins.*not a box of location bins/);
    expect(regionMarkText('Date  Line', [1, 1, 2, 2])).toBe('[date line at <x1_1><y1_1><x2_2><y2_2>]');
    expect(renderAction({ type: 'bbox', region: ' Foot  Note ' })).toBe('<bbox>foot note</bbox>');
    expect(() => renderAction({ type: 'bbox', region: 'note 2' })).toThrow(/action.region/);
    // Runs of spaces between location tokens, then no match: linear now; with two adjacent \s* in
    // the separator this body of 1.2 KB took about 25 s, 2 KB about 200 s.
    const spaces = ' '.repeat(300);
    const body = `<x1_1>${spaces}<y1_2>${spaces}<x2_3>${spaces}<y2_4>${spaces}x`;
    const started = performance.now();
    const long = parseAction(`<bbox>${body}</bbox>`);
    expect(long.kind === 'invalid' && long.reason).toBe('bbox_not_four_numbers');
    // A hostile-input guard, not a speed target: the backtracking parse took 25 s here.
    expect(performance.now() - started).toBeLessThan(2000);
    expect(parseLocationBins(`<x1_1>${spaces},${spaces}<y1_2> <x2_3>,<y2_4>`)).toEqual([1, 2, 3, 4]);
    expect(parseRegionMarks(`[${'a '.repeat(50_000)}`.repeat(2))).toEqual([]);
  });

  it('are one token each in a vocabulary that holds them, and never read inside a longer one', () => {
    const tokenizer = createVocabularyTokenizer(['Revenue', ...LOCATION_TOKENS]);
    const ids = tokenizer.encode('<bbox><x1_1><y1_12><x2_3><y2_32></bbox>');
    expect(ids).toHaveLength(6);
    expect(ids.slice(1, 5).map((id) => tokenizer.tokenText(id))).toEqual([
      '<x1_1>',
      '<y1_12>',
      '<x2_3>',
      '<y2_32>',
    ]);
    expect(tokenizer.decode(ids)).toBe('<bbox><x1_1><y1_12><x2_3><y2_32></bbox>');
    // A token not in the vocabulary falls back to bytes and still round-trips.
    const text = '[source at <x1_99><y1_1>] Revenue';
    expect(tokenizer.decode(tokenizer.encode(text))).toBe(text);
    expect(LOCATION_TOKENS).toHaveLength(4 * (LOCATION_BINS + 1));
    expect(() => createVocabularyTokenizer(['<loc_x>'])).toThrow(/location tokens/);
  });
});
