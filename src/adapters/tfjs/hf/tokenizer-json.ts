import { PROTOCOL_TAG_STRINGS } from '../../../core/protocol/tags';
import { LOCATION, NUMBER_LIST } from '../../../core/protocol/tokenizer';
import type { Tokenizer } from '../../../ports/types';
import { byteLevelBpeModel } from '../../../provider-utils/bpe-model';

/**
 * The protocol and vocabulary tokenizers (src/core/protocol/tokenizer.ts) written as a Hugging Face
 * `tokenizer.json`, so that `tokenizers` (Python, Rust) and `@huggingface/tokenizers` give the same
 * ids on any text. The TS rules: the tags and `<eos>` match anywhere; the rest is cut into pieces
 * (location tokens anywhere, number lists standing alone, runs of letters and digits, runs of other characters, `<`); a piece
 * that is a vocabulary word is its id, any other piece its UTF-8 bytes (ids 0-255).
 *
 * In the tokenizers pipeline: the tags are added tokens (extracted before anything else); a Split
 * pre-tokenizer with the TS regex cuts the pieces; ByteLevel turns each byte into one character
 * (GPT-2's table), so that a BPE model with no merges and `ignore_merges` maps a piece found whole
 * in the vocabulary to its word and any other piece, character by character, to its bytes.
 *
 * One case needs more: a word of one byte (`a`, `5`) has the same byte-level string as the byte
 * itself, yet `a` standing alone is the word and `a` inside an unknown word (`ab`) is the byte.
 * A normalizer appends U+FDD0 (a noncharacter, never in text) to each such word where it stands
 * alone, so the piece `a\uFDD0` is the word's entry and a bare `a` stays a byte; the decoder drops
 * the mark from word tokens only (a U+FDD0 in the text itself is bytes, and decodes as itself).
 */

const MARK = '\uFDD0';
const WORD_CHAR = '[\\p{L}\\p{N}]';
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** GPT-2's byte-to-character table (bytes_to_unicode): printable bytes stand for themselves. */
export function byteLevelAlphabet(): string[] {
  const printable = (b: number) =>
    (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const chars: string[] = [];
  let next = 0;
  for (let b = 0; b < 256; b++) chars.push(String.fromCodePoint(printable(b) ? b : 256 + next++));
  return chars;
}

const ALPHABET = byteLevelAlphabet();
const utf8 = new TextEncoder();
const byteLevel = (text: string) => Array.from(utf8.encode(text), (b) => ALPHABET[b]!).join('');

/** The words of one byte: marked where they stand alone (see above). */
const isOneByte = (word: string) => utf8.encode(word).length === 1;
const marked = (text: string, oneByteWords: ReadonlySet<string>) =>
  text.replace(new RegExp(`(?<!${WORD_CHAR})${WORD_CHAR}+(?!${WORD_CHAR})`, 'gu'), (w) =>
    oneByteWords.has(w) ? `${w}${MARK}` : w,
  );

/**
 * `tokenizer.json` for a protocol or vocabulary tokenizer (ids as in the TS tokenizer: bytes
 * 0-255, the tags and `<eos>`, then the vocabulary's words in order).
 */
export function tokenizerJsonOf(tokenizer: Tokenizer): Record<string, unknown> {
  const specials = [...PROTOCOL_TAG_STRINGS, '<eos>'];
  specials.forEach((text, i) => {
    if (tokenizer.specialTokenId(text) !== 256 + i)
      throw new Error(
        `tokenizerJsonOf: '${text}' is not token ${256 + i} (not a protocol or vocabulary tokenizer)`,
      );
  });
  const words = tokenizer.vocabulary ?? [];
  const base = 256 + specials.length;
  if (tokenizer.vocabSize !== base + words.length)
    throw new Error('tokenizerJsonOf: the vocabulary size is not bytes + tags + words');
  const oneByte = new Set(words.filter(isOneByte));
  const vocab: Record<string, number> = {};
  ALPHABET.forEach((char, byte) => {
    vocab[char] = byte;
  });
  specials.forEach((text, i) => {
    vocab[text] = 256 + i;
  });
  words.forEach((word, i) => {
    vocab[byteLevel(marked(word, oneByte))] = base + i;
  });
  // Number lists first, longest first, standing alone: the same order as the TS regex.
  const lists = words.filter((w) => NUMBER_LIST.test(w)).sort((a, b) => b.length - a.length);
  const listPattern =
    lists.length > 0
      ? `(?<!${WORD_CHAR})(?:${lists.map((l) => escapeRegExp(marked(l, oneByte))).join('|')})(?!${WORD_CHAR})|`
      : '';
  // Location tokens before anything else but the tags (their digits may carry a mark, as the normalizer writes them).
  const locations = words.filter((w) => LOCATION.test(w));
  const locationPattern =
    locations.length > 0 ? `(?:${locations.map((l) => escapeRegExp(marked(l, oneByte))).join('|')})|` : '';
  // A marked word is one piece with its mark (only the words of one byte carry one).
  const markedWords = oneByte.size > 0 ? `(?:${[...oneByte].map(escapeRegExp).join('|')})${MARK}|` : '';
  const pieces = `${locationPattern}${listPattern}${markedWords}${WORD_CHAR}+|[^\\p{L}\\p{N}<]+|<`;
  const normalizers = [...oneByte].map((word) => ({
    type: 'Replace',
    pattern: { Regex: `(?<!${WORD_CHAR})${escapeRegExp(word)}(?!${WORD_CHAR})` },
    content: `${word}${MARK}`,
  }));
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map((content, i) => ({
      id: 256 + i,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: normalizers.length > 0 ? { type: 'Sequence', normalizers } : null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: pieces }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: null,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: byteLevel(MARK) }, content: '' },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    model: byteLevelBpeModel(vocab, [], true),
  };
}
