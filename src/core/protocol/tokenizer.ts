import type { Tokenizer } from '../../ports/types';
import { InvalidArgumentError } from '../errors';
import { PROTOCOL_TAG_STRINGS } from './tags';

const encoder = new TextEncoder();
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const decoder = new TextDecoder('utf-8', { fatal: false });

/**
 * A byte-level tokenizer with every protocol tag (`<think>`, `</search>`, …) as one token:
 * ids 0-255 are UTF-8 bytes, then the tags, then `<eos>`. Any text round-trips.
 */
export function createProtocolTokenizer(): Tokenizer {
  const specials = [...PROTOCOL_TAG_STRINGS, '<eos>'];
  const specialIds = new Map(specials.map((text, i) => [text, 256 + i] as const));
  const pattern = new RegExp(specials.map(escapeRegExp).join('|'), 'g');
  const vocabSize = 256 + specials.length;
  return {
    vocabSize,
    eosTokenId: specialIds.get('<eos>')!,
    encode(text) {
      const ids: number[] = [];
      let last = 0;
      for (const match of text.matchAll(pattern)) {
        for (const byte of encoder.encode(text.slice(last, match.index))) ids.push(byte);
        ids.push(specialIds.get(match[0])!);
        last = match.index + match[0].length;
      }
      for (const byte of encoder.encode(text.slice(last))) ids.push(byte);
      return ids;
    },
    decode(ids) {
      let out = '';
      let bytes: number[] = [];
      const flush = () => {
        if (bytes.length > 0) out += decoder.decode(new Uint8Array(bytes));
        bytes = [];
      };
      for (const id of ids) {
        if (id >= 0 && id < 256) bytes.push(id);
        else {
          flush();
          out += specials[id - 256] ?? '';
        }
      }
      flush();
      return out;
    },
    tokenText(id) {
      if (id >= 256) return specials[id - 256] ?? '';
      return id < 128 ? String.fromCharCode(id) : `<0x${id.toString(16).toUpperCase().padStart(2, '0')}>`;
    },
    specialTokenId(text) {
      return specialIds.get(text);
    },
  };
}

/** Ids 256.. of the protocol tags then `<eos>`, shared by the byte and the vocabulary tokenizer. */
const SPECIALS = [...PROTOCOL_TAG_STRINGS, '<eos>'];

/**
 * A vocabulary entry that is a list of numbers (`36, 326, 300, 350`): one token for the whole list
 * (the tokenizer.json export cuts the same pieces).
 */
export const NUMBER_LIST = /^\p{N}+(?:, \p{N}+)+$/u;
/** A location token (`<x1_12>`, src/core/protocol/location.ts): one token for one coordinate bin, wherever it stands. */
export const LOCATION = /^<[xy][12]_\d+>$/;

/**
 * Words (letters and digits) as single tokens after the bytes, tags and `<eos>`; anything else, or
 * a word not in `vocabulary`, falls back to its UTF-8 bytes. Any text round-trips. A vocabulary
 * built from a corpus makes sequences several times shorter than bytes, and copying a name from
 * the question into a query a one-token choice; it is saved with a policy's checkpoint.
 *
 * An entry may also be a list of numbers joined by ", " (a region's coordinates): it is one token
 * wherever it stands alone (not inside a longer number), as vision-language models write a box in
 * location tokens. Written number by number, a small policy miscounts the repeated separators and
 * writes `[36, 300, 350]` for `[36, 326, 300, 350]` (docs/method.md#why-the-demos-policy-did-not-learn-to-crop).
 * An entry may be a location token (`<x1_12>`): one token wherever it stands, so that a box in
 * location tokens is four choices, and one vocabulary serves every region.
 */
export function createVocabularyTokenizer(vocabulary: readonly string[]): Tokenizer {
  const words = [
    ...new Set(
      vocabulary.filter((w) => /^[\p{L}\p{N}]+$/u.test(w) || NUMBER_LIST.test(w) || LOCATION.test(w)),
    ),
  ];
  if (words.length !== vocabulary.length)
    throw new InvalidArgumentError({
      argument: 'vocabulary',
      message:
        'must be distinct words of letters and digits, lists of numbers joined by ", ", or location tokens such as <x1_12>',
    });
  const base = 256 + SPECIALS.length;
  const wordIds = new Map(words.map((w, i) => [w, base + i] as const));
  const specialIds = new Map(SPECIALS.map((text, i) => [text, 256 + i] as const));
  const bytes = createProtocolTokenizer();
  // Number lists first (longest first), standing alone, so that a list is never read as its numbers.
  const lists = words.filter((w) => NUMBER_LIST.test(w)).sort((a, b) => b.length - a.length);
  const listPattern =
    lists.length > 0 ? `(?<![\\p{L}\\p{N}])(?:${lists.map(escapeRegExp).join('|')})(?![\\p{L}\\p{N}])|` : '';
  const locations = words.filter((w) => LOCATION.test(w));
  const locationPattern = locations.length > 0 ? `${locations.map(escapeRegExp).join('|')}|` : '';
  const pattern = new RegExp(
    `${SPECIALS.map(escapeRegExp).join('|')}|${locationPattern}${listPattern}[\\p{L}\\p{N}]+|[^\\p{L}\\p{N}<]+|<`,
    'gu',
  );
  return {
    vocabSize: base + words.length,
    eosTokenId: specialIds.get('<eos>')!,
    vocabulary: words,
    encode(text) {
      const ids: number[] = [];
      for (const match of text.matchAll(pattern)) {
        const piece = match[0];
        const id = specialIds.get(piece) ?? wordIds.get(piece);
        if (id !== undefined) ids.push(id);
        else for (const byte of encoder.encode(piece)) ids.push(byte);
      }
      return ids;
    },
    decode(ids) {
      const parts: number[] = [];
      let out = '';
      const flush = () => {
        if (parts.length > 0) out += decoder.decode(new Uint8Array(parts));
        parts.length = 0;
      };
      for (const id of ids) {
        if (id >= 0 && id < 256) parts.push(id);
        else {
          flush();
          out += id < base ? (SPECIALS[id - 256] ?? '') : (words[id - base] ?? '');
        }
      }
      flush();
      return out;
    },
    tokenText(id) {
      return id < base ? bytes.tokenText(id) : (words[id - base] ?? '');
    },
    specialTokenId(text) {
      return specialIds.get(text);
    },
  };
}
