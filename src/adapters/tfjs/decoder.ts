import * as tf from '@tensorflow/tfjs';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import { emptyKvCache, gatherKvCache, scatterKvCache, type KvCacheRow, type KvCacheShape } from '../../rollout-engine/kv-cache';
import { createRolloutScheduler, type RolloutScheduler, type ScheduledRow } from '../../rollout-engine/rollout-scheduler';
import { activateBackend, ensureReady, type PolicyContext } from './state';
import type { Transformer } from './transformer';

/** One rollout: its tokens and its key/value cache. */
export interface RowState extends ScheduledRow, KvCacheRow {}

export interface CacheShape extends KvCacheShape {
  vocabSize: number;
}

/**
 * One forward over `rows` feeding their uncached tokens: log-probs [rows, vocabulary] at each row's
 * last token (at `temperature`, as `feed` computes them); the rows' caches then hold every token.
 * The tfjs forward is `feed`; onnx-rollouts.ts runs the same model through ONNX Runtime.
 */
export type RowsForward = (rows: RowState[], temperature: number) => Float32Array[] | Promise<Float32Array[]>;

export function cacheShapeOf(context: PolicyContext): CacheShape {
  const { modelConfig } = context;
  return { contextLength: modelConfig.contextLength, layers: modelConfig.layers, heads: modelConfig.heads, headWidth: modelConfig.width / modelConfig.heads, vocabSize: modelConfig.vocabSize };
}

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
  const pastData = pastLength > 0 ? Array.from({ length: layers }, (_, layer) => [gatherKvCache(rows, layer, 'keys', pastLength, shape), gatherKvCache(rows, layer, 'values', pastLength, shape)] as const) : null;
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
    const lastIndex = tf.tensor1d(rows.map((_, index) => index * chunkLength + pending[index]! - 1), 'int32');
    const last = tf.gather(logits, lastIndex);
    return { logp: tf.logSoftmax(temperature > 0 && temperature !== 1 ? tf.div(last, temperature) : last), keys: cache.keys, values: cache.values };
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

/** Splits rows into forwards that keep the attention scores under the memory bound. */
async function feedAll(forward: RowsForward, shape: CacheShape, rows: RowState[], temperature: number, maxAttentionElements: number): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  const cost = (start: number, end: number) => {
    const slice = rows.slice(start, end);
    const chunkLength = Math.max(...slice.map((r) => r.sequence.length - r.cached));
    const pastLength = Math.max(...slice.map((r) => r.cached));
    return (end - start) * shape.heads * chunkLength * (pastLength + chunkLength);
  };
  let start = 0;
  while (start < rows.length) {
    // At least one row per forward, however long.
    let end = start + 1;
    while (end < rows.length && cost(start, end + 1) <= maxAttentionElements) end++;
    out.push(...(await forward(rows.slice(start, end), temperature)));
    start = end;
  }
  return out;
}

/**
 * Rollout sessions whose key/value caches live across turns, scheduled by the shared rollout
 * scheduler (provider-utils): turns asked for by concurrent sessions decode together, one forward
 * per token step for every row that is generating. `forward` replaces the tfjs forward (`feed`):
 * with `rollouts: 'onnx'` it is onnx-rollouts.ts; sessions that end while an asynchronous forward
 * runs are left out of its results by the scheduler.
 */
export function createDecoder(context: PolicyContext, forward?: RowsForward): RolloutScheduler {
  const { tokenizer, modelConfig, settings, state } = context;
  const model = state.model;
  const shape = cacheShapeOf(context);
  const rowsForward: RowsForward = forward ?? ((rows, temperature) => feed(model, shape, rows, temperature));
  return createRolloutScheduler<RowState>({
    provider: 'tfjs',
    tokenizer,
    vocabSize: modelConfig.vocabSize,
    contextLength: shape.contextLength,
    coalesceSessions: settings.coalesceSessions,
    ensureReady: () => ensureReady(context),
    beforeForward: () => activateBackend(context),
    forward: (rows, temperature) => feedAll(rowsForward, shape, rows, temperature, settings.maxAttentionElements),
    createRow: (ids, sessionIndex, r) => ({
      sequence: [...ids],
      cached: 0,
      ...emptyKvCache(shape),
      random: createRandom(state.samplingSeed, RANDOM_STREAMS.sampling, sessionIndex, r),
      busy: false,
    }),
    releaseRow: (row) => {
      row.keys = [];
      row.values = [];
    },
    nextSessionIndex: () => state.sessionCounter++,
  });
}
