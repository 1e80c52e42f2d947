import { existsSync, readFileSync } from 'node:fs';
import { Tokenizer } from '@huggingface/tokenizers';
import { describe, expect, it } from 'vitest';
import { SMOLLM2_GGUF } from '../../../test/support/smollm2';
import { type GgufFile, type GgufValue, readGguf } from './gguf';
import { ggufTokenizerFiles } from './gguf-tokenizer';
import { refusal } from './__fixtures__/gguf-writer';

// A byte-level vocabulary small enough to follow by hand. The merges are ranked so that each
// pre-tokenizer gives its own ids for "1234567": one piece (GPT-2) lets '3 4' merge first; Llama 3's
// runs of up to three digits give 123|456|7; Qwen2's and SmolLM's single digits merge nothing.
const TOKENS = [
  '<|endoftext|>',
  '<think>',
  '<|begin|>',
  '1',
  '2',
  '3',
  '4',
  '5',
  '6',
  '7',
  '12',
  '123',
  '34',
  '45',
  '456',
  'Ġ',
  'a',
  'b',
  'Ġa',
];
const MERGES = ['3 4', '1 2', '12 3', '4 5', '45 6', 'Ġ a'];
const id = (token: string) => TOKENS.indexOf(token);

function vocabularyFile(overrides: Record<string, GgufValue | undefined> = {}): GgufFile {
  const metadata = new Map<string, GgufValue>([
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.pre', 'smollm'],
    ['tokenizer.ggml.tokens', TOKENS],
    ['tokenizer.ggml.merges', MERGES],
    [
      'tokenizer.ggml.token_type',
      Int32Array.from(TOKENS, (t) => (t === '<think>' ? 4 : t.startsWith('<|') ? 3 : 1)),
    ],
    ['tokenizer.ggml.bos_token_id', 2],
    ['tokenizer.ggml.eos_token_id', 0],
    ['tokenizer.chat_template', '{{ messages[0].content }}'],
  ]);
  for (const [key, value] of Object.entries(overrides))
    if (value === undefined) metadata.delete(key);
    else metadata.set(key, value);
  return { version: 3, metadata, tensors: new Map(), dataOffset: 0 };
}

function tokenizerFor(file: GgufFile) {
  const { tokenizerJson, tokenizerConfig } = ggufTokenizerFiles(file);
  return new Tokenizer(tokenizerJson, tokenizerConfig);
}
const encode = (tokenizer: Tokenizer, text: string, addSpecialTokens = false) =>
  tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids;

describe('ggufTokenizerFiles', () => {
  it("splits digits as llama.cpp's pre-tokenizer of that name does", () => {
    const digits = (pre: string) =>
      encode(tokenizerFor(vocabularyFile({ 'tokenizer.ggml.pre': pre })), '1234567');
    expect(digits('gpt-2')).toEqual(['12', '34', '5', '6', '7'].map(id));
    expect(digits('default')).toEqual(digits('gpt-2'));
    expect(digits('llama-bpe')).toEqual(['123', '456', '7'].map(id));
    expect(digits('qwen2')).toEqual(['1', '2', '3', '4', '5', '6', '7'].map(id));
    for (const pre of ['smollm', 'starcoder', 'refact']) expect(digits(pre)).toEqual(digits('qwen2'));
  });

  it('keeps control and user-defined tokens whole, only control ones special', () => {
    const { tokenizerJson } = ggufTokenizerFiles(vocabularyFile());
    expect(tokenizerJson.added_tokens).toEqual([
      expect.objectContaining({ id: 0, content: '<|endoftext|>', special: true }),
      expect.objectContaining({ id: 1, content: '<think>', special: false }),
      expect.objectContaining({ id: 2, content: '<|begin|>', special: true }),
    ]);
    const tokenizer = tokenizerFor(vocabularyFile());
    expect(encode(tokenizer, '<think>a b<|endoftext|>')).toEqual([
      id('<think>'),
      id('a'),
      id('Ġ'),
      id('b'),
      id('<|endoftext|>'),
    ]);
    expect(encode(tokenizer, 'a a')).toEqual([id('a'), id('Ġa')]);
    expect(tokenizer.decode([id('a'), id('Ġa'), id('<think>')], { skip_special_tokens: false })).toBe(
      'a a<think>',
    );
  });

  it('adds BOS only when the file asks for it, and only with special tokens', () => {
    expect(encode(tokenizerFor(vocabularyFile()), 'a', true)).toEqual([id('a')]);
    const withBos = tokenizerFor(vocabularyFile({ 'tokenizer.ggml.add_bos_token': true }));
    expect(encode(withBos, 'a', true)).toEqual([id('<|begin|>'), id('a')]);
    expect(encode(withBos, 'a', false)).toEqual([id('a')]);
  });

  it('gives tokenizer_config the special tokens, the BOS flag and the chat template', () => {
    expect(
      ggufTokenizerFiles(vocabularyFile({ 'tokenizer.ggml.add_bos_token': true })).tokenizerConfig,
    ).toMatchObject({
      bos_token: '<|begin|>',
      eos_token: '<|endoftext|>',
      add_bos_token: true,
      chat_template: '{{ messages[0].content }}',
    });
  });

  it('refuses a pre-tokenizer it does not know, naming tokenizer.ggml.pre and the known ones', () => {
    const error = refusal(() => ggufTokenizerFiles(vocabularyFile({ 'tokenizer.ggml.pre': 'deepseek-llm' })));
    expect(error.argument).toBe('tokenizer.ggml.pre');
    expect(error.message).toContain("'deepseek-llm'");
    expect(error.message).toContain('llama-bpe');
  });

  it('refuses vocabularies that are not byte-level BPE', () => {
    expect(
      refusal(() => ggufTokenizerFiles(vocabularyFile({ 'tokenizer.ggml.model': 'llama' }))).argument,
    ).toBe('tokenizer.ggml.model');
    expect(
      refusal(() => ggufTokenizerFiles(vocabularyFile({ 'tokenizer.ggml.merges': undefined }))).argument,
    ).toBe('tokenizer.ggml.merges');
  });
});

const reference = JSON.parse(
  readFileSync(new URL('./__fixtures__/smollm2-q4_1.json', import.meta.url), 'utf8'),
) as {
  tokenizer: Array<{ text: string; ids: number[] }>;
  chatTemplate: string;
};

describe.skipIf(!existsSync(SMOLLM2_GGUF))(
  `SmolLM2's tokenizer (${SMOLLM2_GGUF}; run scripts/fetch-models.sh to get it)`,
  () => {
    it("encodes as llama.cpp's llama-tokenize does, and decodes back", () => {
      const file = readGguf(readFileSync(SMOLLM2_GGUF), SMOLLM2_GGUF);
      const { tokenizerJson, tokenizerConfig } = ggufTokenizerFiles(file);
      expect(tokenizerConfig).toMatchObject({
        bos_token: '<|im_start|>',
        eos_token: '<|im_end|>',
        add_bos_token: false,
        chat_template: reference.chatTemplate,
      });
      const tokenizer = new Tokenizer(tokenizerJson, tokenizerConfig);
      for (const { text, ids } of reference.tokenizer) {
        expect(encode(tokenizer, text), JSON.stringify(text)).toEqual(ids);
        if (ids.length > 0)
          expect(
            tokenizer.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: false }),
          ).toBe(text);
      }
    });
  },
);
