import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PROTOCOL_TAG_STRINGS } from '../../../core/protocol/tags';
import { createProtocolTokenizer, createVocabularyTokenizer } from '../../../core/protocol/tokenizer';
import { HARD_WORDS, textArbitrary } from '../__fixtures__/tokenizer-texts';
import { tokenizerJsonOf } from './tokenizer-json';

describe('tokenizerJsonOf', () => {
  it('property: @huggingface/tokenizers gives the vocabulary tokenizer ids on any text, and decodes them back', () => {
    const tokenizer = createVocabularyTokenizer(HARD_WORDS);
    const hf = new HfTokenizer(tokenizerJsonOf(tokenizer), {});
    fc.assert(
      fc.property(textArbitrary, (text) => {
        const ids = hf.encode(text, { add_special_tokens: false }).ids;
        expect(ids).toEqual(tokenizer.encode(text));
        // tokenizers.js refuses to decode no ids.
        if (ids.length > 0)
          expect(hf.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false })).toBe(
            tokenizer.decode(ids),
          );
      }),
      { numRuns: 3000 },
    );
  });

  it('the cases one at a time: a word of one byte, a list standing alone or not, a tag inside a word, location tokens', () => {
    const tokenizer = createVocabularyTokenizer(HARD_WORDS);
    const hf = new HfTokenizer(tokenizerJsonOf(tokenizer), {});
    const base = 256 + PROTOCOL_TAG_STRINGS.length + 1;
    const word = (w: string) => base + HARD_WORDS.indexOf(w);
    for (const [text, ids] of [
      ['a', [word('a')]],
      ['ab', [word('ab')]],
      ['ba', [98, 97]],
      ['a\uFDD0', [word('a'), 0xef, 0xb7, 0x90]],
      ['36, 326, 300, 350', [word('36, 326, 300, 350')]],
      ['136, 326, 300, 350', [49, 51, 54, 44, 32, 51, 50, 54, 44, 32, 51, 48, 48, 44, 32, 51, 53, 48]],
      ['1, 2, 34', [word('1, 2'), 44, 32, 51, 52]],
      ['12, 5', [word('12, 5')]],
      ['hel<search>lo', [104, 101, 108, tokenizer.specialTokenId('<search>'), 108, 111]],
      ['a<x1_1>5', [word('a'), word('<x1_1>'), word('5')]],
      ['<x1_12><y2_5>]', [word('<x1_12>'), word('<y2_5>'), 93]],
      ['<x1_13>', [60, word('x1'), 95, 49, 51, 62]],
    ] as const) {
      expect(tokenizer.encode(text)).toEqual(ids);
      expect(hf.encode(text, { add_special_tokens: false }).ids).toEqual(ids);
    }
  });

  it('the protocol byte tokenizer: bytes and tags, whatever the text', () => {
    const tokenizer = createProtocolTokenizer();
    const hf = new HfTokenizer(tokenizerJsonOf(tokenizer), {});
    fc.assert(
      fc.property(textArbitrary, (text) => {
        expect(hf.encode(text, { add_special_tokens: false }).ids).toEqual(tokenizer.encode(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses a tokenizer it cannot express', () => {
    const tokenizer = createProtocolTokenizer();
    expect(() => tokenizerJsonOf({ ...tokenizer, specialTokenId: () => undefined })).toThrow(/not token 256/);
  });
});
