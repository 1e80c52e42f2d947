import type { CallOptions, SetupCheck } from './common';
import type { PageImage } from './types';

/** One item to embed: a text, or an image (a page or a crop). */
export type EmbeddingInput = { kind: 'text'; text: string } | { kind: 'image'; image: PageImage };

/** Turns texts and images into vectors (in-context demonstration selection). */
export interface Embedder extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  readonly dimensions: number;
  /** One vector of `dimensions` numbers per item, in the items' order. */
  doEmbed(items: readonly EmbeddingInput[], options?: CallOptions): Promise<number[][]>;
}
