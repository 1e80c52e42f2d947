import { InvalidArgumentError } from '../../core/errors';
import { hashString } from '../../core/random';
import type { Embedder, EmbeddingInput } from '../../ports/embedder';
import type { CallOptions } from '../../ports/common';

/** Lower-case words of letters and digits. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/**
 * An offline Embedder: hashed bag of words (the feature-hashing trick, a sign per word against
 * collisions), sublinear term frequency 1 + log(tf), L2-normalised. Deterministic, no model; good
 * enough for the embedded ICD demo. It embeds text only.
 */
export function createHashedEmbedder(options: { dimensions?: number; seed?: number } = {}): Embedder {
  const dimensions = options.dimensions ?? 128;
  if (!(Number.isInteger(dimensions) && dimensions >= 2))
    throw new InvalidArgumentError({
      argument: 'dimensions',
      message: `must be an integer >= 2, got ${String(dimensions)}`,
    });
  const seed = options.seed ?? 0;
  const embedText = (text: string): number[] => {
    const counts = new Map<string, number>();
    for (const w of words(text)) counts.set(w, (counts.get(w) ?? 0) + 1);
    const v = new Array<number>(dimensions).fill(0);
    for (const [w, tf] of counts) {
      const h = hashString(`${seed}:${w}`);
      v[h % dimensions]! += (h & 0x80000000 ? -1 : 1) * (1 + Math.log(tf));
    }
    const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    return norm === 0 ? v : v.map((x) => x / norm);
  };
  return {
    specificationVersion: 'v1',
    provider: `hashed-bow:${dimensions}`,
    dimensions,
    async doEmbed(items: readonly EmbeddingInput[], _options?: CallOptions): Promise<number[][]> {
      return items.map((item, i) => {
        if (item.kind !== 'text')
          throw new InvalidArgumentError({
            argument: `items[${i}]`,
            message: 'the hashed bag-of-words embedder embeds text only; use an image embedder for images',
          });
        return embedText(item.text);
      });
    },
  };
}
