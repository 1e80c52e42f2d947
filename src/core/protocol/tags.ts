/** The tag vocabulary of the Searcher protocol and of Search-R1 mode (docs/method.md#action-protocol, #search-r1-mode). */
export const ACTION_TAGS = ['search', 'bbox', 'search_complete', 'answer'] as const;
/** One of ACTION_TAGS. */
export type ActionTag = (typeof ACTION_TAGS)[number];

/** Every tag of the protocol: `think`, the action tags, and `information` (observations). */
export const PROTOCOL_TAGS = ['think', ...ACTION_TAGS, 'information'] as const;
/** One of PROTOCOL_TAGS. */
export type ProtocolTag = (typeof PROTOCOL_TAGS)[number];

export const open = (tag: ProtocolTag): string => `<${tag}>`;
export const close = (tag: ProtocolTag): string => `</${tag}>`;

/** Every opening and closing protocol tag, in a fixed order (a tokenizer's special tokens). */
export const PROTOCOL_TAG_STRINGS: readonly string[] = PROTOCOL_TAGS.flatMap((tag) => [
  open(tag),
  close(tag),
]);

/** Closing tags that end a policy turn: generation stops right after one of them. */
export const TURN_STOP_TAGS: readonly string[] = ACTION_TAGS.map(close);
