/**
 * The value types the ports speak in. They belong to the ports (an adapter author needs nothing
 * else); the core imports them from here, never the other way round.
 */

/** A region of an image in pixels: left, top, right, bottom (right > left, bottom > top). */
export type BoundingBox = readonly [x1: number, y1: number, x2: number, y2: number];

/** An encoded image (PNG, JPEG, …) with its pixel size. */
export interface PageImage {
  mimeType: string;
  width: number;
  height: number;
  bytes: Uint8Array;
}

/** One search result. `basename` identifies the page for NDCG (`{deck}_{page}.png`). */
export interface SearchHit {
  id: string;
  basename: string;
  score: number;
  text?: string;
  image?: PageImage;
}

/** What the Generator answers from: retrieved pages and crops, in that order. */
export interface Evidence {
  kind: 'page' | 'crop';
  /** The page's basename (for a crop: of the page it was cut from). */
  basename: string;
  text?: string;
  image?: PageImage;
  /** For a crop: the region in the source page's pixels. */
  sourceRegion?: BoundingBox;
}

/** Tokens a provider billed for one call. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
}

/** One generated token (docs/method.md#trajectories): id as sampled, its text, its log-prob, its absolute position. */
export interface TokenStep {
  readonly tokenId: number;
  readonly tokenText: string;
  readonly logProb: number;
  /** Position in the full sequence (prompt + policy + observation tokens). */
  readonly position: number;
}

/** The tokenizer a policy exposes. Ids are what the model saw; text is for logs only. */
export interface Tokenizer {
  readonly vocabSize: number;
  /** The token ids of `text`. */
  encode(text: string): number[];
  /** The text of token ids (the inverse of `encode` on its output). */
  decode(ids: readonly number[]): string;
  /** The text of one token as it would be logged in a TokenStep (may be a partial character). */
  tokenText(id: number): string;
  /** Id of a special token such as `</search>`, if the tokenizer has it as a single token. */
  specialTokenId(text: string): number | undefined;
  readonly eosTokenId: number;
  /** Words the tokenizer has as single tokens beyond bytes and tags (a corpus vocabulary), in id order. */
  readonly vocabulary?: readonly string[];
}
