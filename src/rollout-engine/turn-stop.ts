import type { TurnOutput } from '../ports/policy-backend';
import type { Tokenizer } from '../ports/types';

/**
 * When a rollout's turn ends, the same for every in-process policy backend: on the tokenizer's
 * end-of-sequence token ('eos'); right after a closing tag of `stopAfter` ('stop'), whether the
 * tag came as its own token or spelled out in several tokens; or at the turn's token budget or the
 * model's context ('length').
 */
export interface TurnStop {
  /** The finish reason after `tokenId` was appended, or null to go on. */
  afterToken(tokenId: number, stepsSoFar: number, sequenceLength: number): TurnOutput['finishReason'] | null;
}

/** Tags that are one token stop on that token; every stop string also stops when spelled out. */
export function createTurnStop(
  tokenizer: Tokenizer,
  stopAfter: readonly string[],
  limits: { maxTokens: number; contextLength: number; extraEosTokenIds?: readonly number[] },
): TurnStop {
  const stopIds = new Set<number>();
  for (const stop of stopAfter) {
    const id = tokenizer.specialTokenId(stop);
    if (id !== undefined) stopIds.add(id);
  }
  const eosIds = new Set([tokenizer.eosTokenId, ...(limits.extraEosTokenIds ?? [])]);
  const longest = Math.max(64, ...stopAfter.map((s) => s.length));
  // The last decoded characters, to spot a stop string spelled out in several tokens.
  let tail = '';
  return {
    afterToken(tokenId, stepsSoFar, sequenceLength) {
      if (eosIds.has(tokenId)) return 'eos';
      if (stopIds.has(tokenId)) return 'stop';
      if (stopAfter.length > 0) {
        tail = (tail + tokenizer.decode([tokenId])).slice(-longest);
        if (stopAfter.some((stop) => tail.endsWith(stop))) return 'stop';
      }
      if (stepsSoFar >= limits.maxTokens || sequenceLength >= limits.contextLength) return 'length';
      return null;
    },
  };
}
