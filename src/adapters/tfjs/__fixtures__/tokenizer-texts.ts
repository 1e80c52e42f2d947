import fc from 'fast-check';
import { PROTOCOL_TAG_STRINGS } from '../../../core/protocol/tags';

// The hard cases of the vocabulary tokenizer: words of one byte (`a` alone is the word, inside
// `ab` a byte), of one multi-byte character, number lists (one token standing alone, longest
// first, never inside a longer number), words that prefix others, location tokens (one token
// anywhere, their digits words of one byte too), and the tags anywhere.
export const HARD_WORDS = [
  'a',
  'I',
  '5',
  '0',
  'é',
  '한',
  'ab',
  'abc',
  'hello',
  'Corcor',
  '2019',
  '한국',
  'x1',
  '36, 326, 300, 350',
  '1, 2, 3',
  '1, 2',
  '5, 6',
  '12, 5',
  '<x1_1>',
  '<x1_12>',
  '<y2_5>',
  '<y1_0>',
];

/** Texts built from the vocabulary's words, the tags, separators and arbitrary unicode. */
export const textArbitrary = fc
  .array(
    fc.oneof(
      fc.constantFrom(...HARD_WORDS, ...PROTOCOL_TAG_STRINGS, '<eos>'),
      fc.constantFrom(' ', '\n', ', ', ',', '<', '>', '</', '_', '-', '[', ']', '\uFDD0', 'a\u0301', '½', '٣', '<x1_', '<y2_9>'),
      fc.string({ maxLength: 6, unit: 'grapheme' }),
      fc.string({ maxLength: 4 }),
    ),
    { maxLength: 16 },
  )
  .map((parts) => parts.join(''));
