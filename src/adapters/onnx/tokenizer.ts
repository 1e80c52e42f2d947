import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import type { Tokenizer } from '../../ports/types';

/**
 * The port's tokenizer over a Hugging Face `tokenizer.json` (tokenizers.js, pure JavaScript).
 * `encode` adds no special tokens (no BOS): prompts and observations are encoded piece by piece
 * and joined, so a template's BOS belongs in the prompt text. A tag is "special" (a single-token
 * stop) when the tokenizer encodes it as one token, as added tokens are.
 */
export function createHfTokenizer(
  tokenizerJson: object,
  tokenizerConfig: object,
  options: { vocabSize: number; eosTokenId: number },
): Tokenizer {
  const hf = new HfTokenizer(tokenizerJson, tokenizerConfig);
  const single = new Map<string, number | undefined>();
  const decode = (ids: readonly number[]) =>
    hf.decode([...ids], { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  return {
    vocabSize: options.vocabSize,
    eosTokenId: options.eosTokenId,
    encode: (text) => hf.encode(text, { add_special_tokens: false }).ids,
    decode,
    tokenText: (id) => decode([id]),
    specialTokenId(text) {
      if (!single.has(text)) {
        const ids = text === '' ? [] : hf.encode(text, { add_special_tokens: false }).ids;
        single.set(text, ids.length === 1 ? ids[0] : undefined);
      }
      return single.get(text);
    },
  };
}
