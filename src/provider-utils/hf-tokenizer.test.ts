import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createHfTokenizer, tokenIdsOf } from './hf-tokenizer';

const dir = join(import.meta.dirname, '../adapters/onnx/__fixtures__/tiny-gpt');
const read = (name: string) => JSON.parse(readFileSync(join(dir, name), 'utf8')) as Record<string, unknown>;

describe('createHfTokenizer', () => {
  const json = read('tokenizer.json');
  const known = tokenIdsOf(json);
  const padded = Math.max(...known) + 8;
  const tokenizer = createHfTokenizer(json, read('tokenizer_config.json'), {
    vocabSize: padded,
    eosTokenId: 0,
  });

  it('decodes what it encodes, with no special tokens added', () => {
    const text = 'the quick brown fox';
    const ids = tokenizer.encode(text);
    expect(ids.length).toBeGreaterThan(0);
    expect(tokenizer.decode(ids)).toBe(text);
  });

  it('decodes ids without a token (an embedding padded past the vocabulary) to no text, and no ids to ""', () => {
    const ids = tokenizer.encode('fox');
    const unknown = padded - 1;
    expect(known.has(unknown)).toBe(false);
    expect(tokenizer.decode([...ids, unknown])).toBe('fox');
    expect(tokenizer.tokenText(unknown)).toBe('');
    expect(tokenizer.decode([])).toBe('');
  });
});
