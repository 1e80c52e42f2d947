import * as tf from '@tensorflow/tfjs';
import { gatherKvCache, scatterKvCache } from '../../../rollout-engine/kv-cache';
import type { CacheShape, RolloutEngine, RowState } from '../engine';
import type { Transformer } from './transformer';

/** One forward over `rows` feeding their uncached tokens; returns log-probs [rows, vocabulary] at their last token. */
function feed(model: Transformer, shape: CacheShape, rows: RowState[], temperature: number): Float32Array[] {
  const { layers, heads, headWidth, vocabSize } = shape;
  const pending = rows.map((r) => r.sequence.length - r.cached);
  const chunkLength = Math.max(...pending);
  const pastLength = Math.max(...rows.map((r) => r.cached));
  const rowCount = rows.length;
  // Rows with fewer new tokens are right-padded with their last one: causal masking keeps the padding out of
  // the real tokens' attention, its keys are never cached, and each row's log-probs are read at its own last token.
  const tokenData = new Int32Array(rowCount * chunkLength);
  const positionData = new Int32Array(rowCount * chunkLength);
  rows.forEach((r, index) => {
    for (let offset = 0; offset < chunkLength; offset++) {
      const position = Math.min(r.cached + offset, r.sequence.length - 1);
      tokenData[index * chunkLength + offset] = r.sequence[position]!;
      positionData[index * chunkLength + offset] = position;
    }
  });
  const pastData =
    pastLength > 0
      ? Array.from(
          { length: layers },
          (_, layer) =>
            [
              gatherKvCache(rows, layer, 'keys', pastLength, shape),
              gatherKvCache(rows, layer, 'values', pastLength, shape),
            ] as const,
        )
      : null;
  // Tensors out of tidy, arrays read outside it (tidy walks every element of a returned array).
  const outputs = tf.tidy(() => {
    const past = pastData && {
      keys: pastData.map(([k]) => tf.tensor4d(k, [rowCount, heads, pastLength, headWidth])),
      values: pastData.map(([, v]) => tf.tensor4d(v, [rowCount, heads, pastLength, headWidth])),
    };
    const { logits, cache } = model.forwardChunk(
      tf.tensor2d(tokenData, [rowCount, chunkLength], 'int32'),
      tf.tensor2d(positionData, [rowCount, chunkLength], 'int32'),
      past,
      rows.map((r) => r.cached),
    );
    const lastIndex = tf.tensor1d(
      rows.map((_, index) => index * chunkLength + pending[index]! - 1),
      'int32',
    );
    const last = tf.gather(logits, lastIndex);
    return {
      logp: tf.logSoftmax(temperature > 0 && temperature !== 1 ? tf.div(last, temperature) : last),
      keys: cache.keys,
      values: cache.values,
    };
  });
  try {
    const logpData = outputs.logp.dataSync() as Float32Array;
    for (let layer = 0; layer < layers; layer++) {
      const keys = outputs.keys[layer]!.dataSync() as Float32Array;
      const values = outputs.values[layer]!.dataSync() as Float32Array;
      scatterKvCache(rows, layer, 'keys', keys, { length: chunkLength, offset: 0 }, pending, shape);
      scatterKvCache(rows, layer, 'values', values, { length: chunkLength, offset: 0 }, pending, shape);
    }
    rows.forEach((r, index) => {
      r.cached += pending[index]!;
    });
    return rows.map((_, index) => logpData.slice(index * vocabSize, (index + 1) * vocabSize));
  } finally {
    tf.dispose([outputs.logp, ...outputs.keys, ...outputs.values]);
  }
}

/** The tfjs rollout engine: `feed` on the training backend's model (the default, `rollouts: 'tfjs'`). */
export function createTfjsRolloutEngine(model: Transformer, shape: CacheShape): RolloutEngine {
  return { forward: (rows, temperature) => feed(model, shape, rows, temperature), dispose: async () => {} };
}
