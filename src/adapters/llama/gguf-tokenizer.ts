import { InvalidArgumentError } from '../../core/errors';
import { byteLevelBpeModel } from '../../provider-utils/bpe-model';
import type { GgufFile, GgufValue } from './gguf';

// A GGUF carries no tokenizer.json: llama.cpp keeps the vocabulary, merges and token kinds as
// metadata and picks its pre-tokenizer regexes by the name in tokenizer.ggml.pre
// (src/llama-vocab.cpp). This rebuilds the Hugging Face tokenizer.json that tokenises the same way,
// so that tokenizers.js (or the Rust tokenizers) gives the ids llama.cpp gives.

// llama_token_type (llama.h): 3 is CONTROL (<|im_start|>), 4 USER_DEFINED (an added, non-special
// token such as <think>). llama.cpp matches both whole in text, so both become added tokens.
const TOKEN_TYPE_CONTROL = 3;
const TOKEN_TYPE_USER_DEFINED = 4;

// Llama 3's and Qwen2's split regexes as their tokenizer.json files give them (transformers'
// qwen2/tokenization_qwen2.py PRETOKENIZE_REGEX; llama.cpp's LLAMA3 and QWEN2 cases); they differ
// only in digits: runs of up to three for Llama 3, one at a time for Qwen2.
const LLAMA3_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_SPLIT =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const byteLevel = (useRegex: boolean) => ({
  type: 'ByteLevel',
  add_prefix_space: false,
  trim_offsets: true,
  use_regex: useRegex,
});
const splitThenBytes = (regex: string) => ({
  type: 'Sequence',
  pretokenizers: [
    { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false },
    byteLevel(false),
  ],
});

// llama.cpp's STARCODER/REFACT/SMOLLM case is `\p{N}` and then GPT-2's regex; SmolLM2's own
// tokenizer.json writes it as Digits(individual_digits) before ByteLevel. Digits is Unicode-numeric
// in the Rust tokenizers but ASCII-only in tokenizers.js, so the digit split is spelled as the
// regex llama.cpp uses, which both libraries read the same way. 'default' is a file whose converter
// did not know its tokenizer; GPT-2's split is what such a byte-level vocabulary was made with.
const PRE_TOKENIZERS: Record<string, object> = {
  smollm: {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: '\\p{N}' }, behavior: 'Isolated', invert: false },
      byteLevel(true),
    ],
  },
  'gpt-2': byteLevel(true),
  default: byteLevel(true),
  qwen2: splitThenBytes(QWEN2_SPLIT),
  'llama-bpe': splitThenBytes(LLAMA3_SPLIT),
};
PRE_TOKENIZERS.starcoder = PRE_TOKENIZERS.smollm!;
PRE_TOKENIZERS.refact = PRE_TOKENIZERS.smollm!;

function fail(field: string, message: string): never {
  throw new InvalidArgumentError({ argument: field, message });
}

function stringList(value: GgufValue | undefined, field: string): string[] {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    fail(field, 'must be an array of strings in the GGUF metadata');
  return value as string[];
}

function optionalBoolean(value: GgufValue | undefined, field: string): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  return fail(field, `must be a boolean, got ${String(value)}`);
}

/**
 * A Hugging Face tokenizer.json and tokenizer_config.json for a GGUF's byte-level BPE vocabulary
 * (tokenizer.ggml.model 'gpt2'), for `new Tokenizer(tokenizerJson, tokenizerConfig)` from
 * `@huggingface/tokenizers`.
 */
export function ggufTokenizerFiles(file: GgufFile): {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
} {
  const meta = file.metadata;
  const model = meta.get('tokenizer.ggml.model');
  if (model !== 'gpt2')
    fail(
      'tokenizer.ggml.model',
      `'${String(model)}' is not supported; only byte-level BPE ('gpt2', as Llama 3, Qwen and SmolLM use) is`,
    );
  const pre = meta.get('tokenizer.ggml.pre') ?? 'default';
  const preTokenizer = typeof pre === 'string' ? PRE_TOKENIZERS[pre] : undefined;
  if (preTokenizer === undefined)
    fail(
      'tokenizer.ggml.pre',
      `the pre-tokenizer '${String(pre)}' is not supported (supported: ${Object.keys(PRE_TOKENIZERS).sort().join(', ')})`,
    );

  const tokens = stringList(meta.get('tokenizer.ggml.tokens'), 'tokenizer.ggml.tokens');
  const merges = stringList(meta.get('tokenizer.ggml.merges'), 'tokenizer.ggml.merges');
  const types = meta.get('tokenizer.ggml.token_type');
  if (types !== undefined && !(ArrayBuffer.isView(types) && (types as Int32Array).length === tokens.length))
    fail('tokenizer.ggml.token_type', `must be a numeric array of one type per token (${tokens.length})`);

  const vocab: Record<string, number> = {};
  for (let id = 0; id < tokens.length; id++) vocab[tokens[id]!] = id;

  const addedTokens: object[] = [];
  if (types !== undefined) {
    const kinds = types as Int32Array;
    for (let id = 0; id < tokens.length; id++) {
      const kind = kinds[id];
      if (kind === TOKEN_TYPE_CONTROL || kind === TOKEN_TYPE_USER_DEFINED)
        addedTokens.push({
          id,
          content: tokens[id],
          single_word: false,
          lstrip: false,
          rstrip: false,
          normalized: false,
          special: kind === TOKEN_TYPE_CONTROL,
        });
    }
  }

  const tokenAt = (key: string): string | null => {
    const id = meta.get(`tokenizer.ggml.${key}`);
    if (id === undefined) return null;
    if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || id >= tokens.length)
      fail(`tokenizer.ggml.${key}`, `must be a token id below ${tokens.length}, got ${String(id)}`);
    return tokens[id as number]!;
  };
  const bos = tokenAt('bos_token_id');
  const eos = tokenAt('eos_token_id');
  const addBos =
    optionalBoolean(meta.get('tokenizer.ggml.add_bos_token'), 'tokenizer.ggml.add_bos_token') ?? false;
  const addEos =
    optionalBoolean(meta.get('tokenizer.ggml.add_eos_token'), 'tokenizer.ggml.add_eos_token') ?? false;

  // A model that wants BOS (Llama 3) gets it the way its tokenizer.json adds it: a template
  // around each sequence, applied only when special tokens are asked for.
  type Piece =
    | { SpecialToken: { id: string; type_id: number } }
    | { Sequence: { id: string; type_id: number } };
  const specials: Record<string, object> = {};
  const wrap = (sequence: 'A' | 'B', typeId: number): Piece[] => {
    const pieces: Piece[] = [];
    const special = (token: string | null, on: boolean) => {
      if (!on || token === null) return;
      pieces.push({ SpecialToken: { id: token, type_id: typeId } });
      specials[token] = { id: token, ids: [vocab[token]], tokens: [token] };
    };
    special(bos, addBos);
    pieces.push({ Sequence: { id: sequence, type_id: typeId } });
    special(eos, addEos);
    return pieces;
  };
  const single = wrap('A', 0);
  const postProcessor =
    single.length > 1
      ? { type: 'TemplateProcessing', single, pair: [...single, ...wrap('B', 1)], special_tokens: specials }
      : { ...byteLevel(true), trim_offsets: false };

  const tokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens,
    normalizer: null,
    pre_tokenizer: preTokenizer,
    post_processor: postProcessor,
    decoder: byteLevel(true),
    model: byteLevelBpeModel(
      vocab,
      // Byte-level tokens spell a space as 'Ġ', so a merge's one space separates its two halves.
      merges.map((merge) => {
        const space = merge.indexOf(' ');
        if (space <= 0) fail('tokenizer.ggml.merges', `'${merge}' is not two tokens separated by a space`);
        return [merge.slice(0, space), merge.slice(space + 1)];
      }),
      false,
    ),
  };

  const chatTemplate = meta.get('tokenizer.chat_template');
  const tokenizerConfig: Record<string, unknown> = {
    add_bos_token: addBos,
    add_eos_token: addEos,
    bos_token: bos,
    eos_token: eos,
    ...(typeof chatTemplate === 'string' && { chat_template: chatTemplate }),
    clean_up_tokenization_spaces: false,
  };
  return { tokenizerJson, tokenizerConfig };
}
