import type { CallOptions, SetupCheck } from './common';
import type { PageImage } from './types';

export type EmbeddingInput = { kind: 'text'; text: string } | { kind: 'image'; image: PageImage };

/** Turns texts and images into vectors (in-context demonstration selection). */
export interface Embedder extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  readonly dimensions: number;
  doEmbed(items: readonly EmbeddingInput[], options?: CallOptions): Promise<number[][]>;
}
