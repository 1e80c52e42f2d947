// Which chunks of one update keep their forward's activations for their backward (the Llama and
// the ONNX training engines): all chunks' forwards run before the first backward, so what they keep
// adds up. A chunk keeps while its activations, predicted from the bytes a token took so far, fit
// the budget; one that would not fetches only its log-probs, so nothing is copied out to be dropped.

export interface KeptBudget {
  /** Whether a chunk of `tokens` (rows x padded length) should keep its activations. */
  shouldKeep(tokens: number): boolean;
  /** Counts a kept chunk's bytes; false when they went past the budget after all (drop them). */
  admit(bytes: number, tokens: number): boolean;
}

export function createKeptBudget(budget: number): KeptBudget {
  let bytes = 0;
  let tokens = 0;
  return {
    shouldKeep(chunkTokens) {
      const predicted = tokens > 0 ? (bytes / tokens) * chunkTokens : 0;
      return budget > 0 && bytes + predicted <= budget;
    },
    admit(chunkBytes, chunkTokens) {
      if (bytes + chunkBytes > budget) return false;
      bytes += chunkBytes;
      tokens += chunkTokens;
      return true;
    },
  };
}
