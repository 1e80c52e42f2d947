/**
 * The `model` of a Hugging Face `tokenizer.json` for a byte-level BPE (the rebuilt GGUF tokenizer,
 * the protocol tokenizer): every byte is a token, so no unknown token, byte fallback, dropout or
 * subword affixes; `ignoreMerges` looks a whole piece up in the vocabulary before merging.
 */
export function byteLevelBpeModel(
  vocab: Readonly<Record<string, number>>,
  merges: readonly (readonly string[])[],
  ignoreMerges: boolean,
) {
  return {
    type: 'BPE',
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: null,
    end_of_word_suffix: null,
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: ignoreMerges,
    vocab,
    merges,
  };
}
