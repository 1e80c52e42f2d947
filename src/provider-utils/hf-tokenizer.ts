import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import type { Tokenizer } from '../ports/types';

// The one wrapper of tokenizers.js for every adapter that reads a Hugging Face `tokenizer.json`
// (the ONNX and Llama policies directly, the tfjs policy's `initFrom` after adding the protocol
// tags). It imports @huggingface/tokenizers when loaded: import it after the package is known to
// be there (an adapter's entry loads it through loadWithOptionalPackages).

/** The ids that have a token in a `tokenizer.json`: its model's vocabulary and its added tokens. */
export function tokenIdsOf(tokenizerJson: object): Set<number> {
  const json = tokenizerJson as { model?: { vocab?: unknown }; added_tokens?: Array<{ id?: unknown }> };
  const ids = new Set<number>();
  const vocab = json.model?.vocab;
  // Unigram keeps its vocabulary as [piece, score] pairs, the id being the index.
  if (Array.isArray(vocab)) vocab.forEach((_, i) => ids.add(i));
  else if (vocab && typeof vocab === 'object')
    for (const id of Object.values(vocab)) if (typeof id === 'number') ids.add(id);
  for (const t of json.added_tokens ?? []) if (typeof t.id === 'number') ids.add(t.id);
  return ids;
}

/**
 * The Tokenizer port over a Hugging Face `tokenizer.json` (tokenizers.js, pure JavaScript).
 * `encode` adds no special tokens (no BOS): prompts and observations are encoded piece by piece
 * and joined, so a template's BOS belongs in the prompt text. A tag is "special" (a single-token
 * stop) when the tokenizer encodes it as one token, as added tokens are. Ids without a token (the
 * rows a model pads its embedding with) decode to no text: tokenizers.js would fail on them, and on
 * an empty list.
 */
export function createHfTokenizer(
  tokenizerJson: object,
  tokenizerConfig: object,
  options: { vocabSize: number; eosTokenId: number },
): Tokenizer {
  const hf = new HfTokenizer(tokenizerJson, tokenizerConfig);
  const known = tokenIdsOf(tokenizerJson);
  const single = new Map<string, number | undefined>();
  const decode = (ids: readonly number[]) => {
    const kept = ids.filter((id) => known.has(id));
    return kept.length === 0
      ? ''
      : hf.decode(kept, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  };
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
