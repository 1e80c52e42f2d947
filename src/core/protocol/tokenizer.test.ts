import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PROTOCOL_TAG_STRINGS } from './tags';
import { createProtocolTokenizer, createVocabularyTokenizer } from './tokenizer';
import { neutraliseTags, renderObservation } from './observation';
import { buildPrompt } from '../episode/prompt';

describe('createProtocolTokenizer', () => {
  const tokenizer = createProtocolTokenizer();

  it('makes every protocol tag one token', () => {
    for (const tag of PROTOCOL_TAG_STRINGS) {
      const ids = tokenizer.encode(tag);
      expect(ids).toHaveLength(1);
      expect(tokenizer.specialTokenId(tag)).toBe(ids[0]);
      expect(tokenizer.tokenText(ids[0]!)).toBe(tag);
    }
  });

  it('encodes other text as UTF-8 bytes', () => {
    expect(tokenizer.encode('<search>é</search>')).toEqual([
      tokenizer.specialTokenId('<search>'),
      0xc3,
      0xa9,
      tokenizer.specialTokenId('</search>'),
    ]);
  });

  it('property: decode(encode(text)) === text', () => {
    const pieces = fc.constantFrom(
      ...PROTOCOL_TAG_STRINGS,
      'a',
      '한국',
      '图中',
      '😀',
      ' ',
      '\n',
      '<',
      '>',
      '</',
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(pieces, fc.string({ maxLength: 8 })), { maxLength: 20 }), (parts) => {
        const text = parts.join('');
        expect(tokenizer.decode(tokenizer.encode(text))).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('createVocabularyTokenizer', () => {
  const tok = createVocabularyTokenizer(['Corcor', 'revenue', '2019', 'What']);

  it('makes vocabulary words one token each and falls back to bytes, round-tripping any text', () => {
    const base = tok.vocabSize - 4;
    expect(tok.encode('<search>Corcor revenue 2019</search>')).toEqual([
      tok.specialTokenId('<search>'),
      base,
      32,
      base + 1,
      32,
      base + 2,
      tok.specialTokenId('</search>'),
    ]);
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme' }),
        fc.constantFrom('', '<search>', '</bbox>', 'Corcor', '<eos>', '<'),
        (text, inject) => {
          const s = `${text}${inject}${text}`;
          expect(tok.decode(tok.encode(s))).toBe(s);
        },
      ),
      { numRuns: 500 },
    );
    expect(tok.encode('Corcorx')).toHaveLength(7);
    expect(tok.tokenText(tok.vocabSize - 4)).toBe('Corcor');
    expect(tok.vocabulary).toEqual(['Corcor', 'revenue', '2019', 'What']);
  });

  it('refuses words that are not letters and digits, or repeated', () => {
    expect(() => createVocabularyTokenizer(['ok', 'not ok'])).toThrow(/vocabulary/);
    expect(() => createVocabularyTokenizer(['a', 'a'])).toThrow(/distinct/);
    expect(() => createVocabularyTokenizer(['36,326'])).toThrow(/lists of numbers/);
    expect(() => createVocabularyTokenizer(['36, x'])).toThrow(/lists of numbers/);
  });

  it('makes a list of numbers in the vocabulary one token where it stands alone, and round-trips', () => {
    const boxes = createVocabularyTokenizer(['36', '326', '36, 326, 300, 350', '36, 326']);
    const id = (w: string) => boxes.vocabSize - 4 + boxes.vocabulary!.indexOf(w);
    expect(boxes.encode('<bbox>[36, 326, 300, 350]</bbox>')).toEqual([
      boxes.specialTokenId('<bbox>'),
      91,
      id('36, 326, 300, 350'),
      93,
      boxes.specialTokenId('</bbox>'),
    ]);
    // The longest list wins; inside a longer number the list is not a token.
    expect(boxes.encode('at 36, 326.')).toEqual([97, 116, 32, id('36, 326'), 46]);
    expect(boxes.encode('136, 326')).not.toContain(id('36, 326'));
    expect(boxes.encode('36, 3260')).not.toContain(id('36, 326'));
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme' }),
        fc.constantFrom('36, 326, 300, 350', '36, 326', '1', ', '),
        (text, inject) => {
          const s = `${text}${inject}${text}${inject}`;
          expect(boxes.decode(boxes.encode(s))).toBe(s);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('data never becomes a special token', () => {
  const tokenizer = createProtocolTokenizer();
  const specials = new Set([...PROTOCOL_TAG_STRINGS, '<eos>'].map((tag) => tokenizer.specialTokenId(tag)));
  const hasSpecial = (text: string) => tokenizer.encode(text).some((id) => specials.has(id));

  it('neutralises a literal <eos> (any case) in page text, like the protocol tags', () => {
    const observation = renderObservation([
      { kind: 'page', basename: 'p.png', text: 'end of slide <eos> and <EOS>, </answer>' },
    ]);
    expect(hasSpecial(observation.replace(/^<information>|<\/information>$/g, ''))).toBe(false);
    expect(neutraliseTags('a <eos> b')).toBe('a ‹eos› b');
  });

  it('neutralises tags and <eos> in the question of the prompt', () => {
    for (const mode of ['searcher', 'answer'] as const) {
      const prompt = buildPrompt('What does <eos> mean in <answer>x</answer>?', mode, '');
      expect(hasSpecial(prompt)).toBe(false);
      expect(prompt).toContain('‹eos›');
    }
  });
});
