import { createRandom, RANDOM_STREAMS } from '../../core/random';
import { emptyKvCache } from '../../rollout-engine/kv-cache';
import { createRolloutScheduler, type RolloutScheduler } from '../../rollout-engine/rollout-scheduler';
import type { CacheShape, RolloutEngine, RowState, RowsForward } from '../engines/engine';
import { activateBackend, ensureReady, type PolicyContext } from './state';

export function cacheShapeOf(context: PolicyContext): CacheShape {
  const { modelConfig } = context;
  return {
    contextLength: modelConfig.contextLength,
    layers: modelConfig.layers,
    heads: modelConfig.heads,
    headWidth: modelConfig.width / modelConfig.heads,
    vocabSize: modelConfig.vocabSize,
  };
}

/** Splits rows into forwards that keep the attention scores under the memory bound. */
async function feedAll(
  forward: RowsForward,
  shape: CacheShape,
  rows: RowState[],
  temperature: number,
  maxAttentionElements: number,
): Promise<Float32Array[]> {
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
 * scheduler (src/rollout-engine): turns asked for by concurrent sessions decode together, one forward
 * per token step for every row that is generating. The forwards are the rollout engine's (tfjs or,
 * with `rollouts: 'onnx'`, ONNX Runtime); sessions that end while an asynchronous forward runs are
 * left out of its results by the scheduler.
 */
export function createDecoder(context: PolicyContext, rollouts: RolloutEngine): RolloutScheduler {
  const { tokenizer, modelConfig, settings, state } = context;
  const shape = cacheShapeOf(context);
  return createRolloutScheduler<RowState>({
    provider: 'tfjs',
    tokenizer,
    vocabSize: modelConfig.vocabSize,
    contextLength: shape.contextLength,
    coalesceSessions: settings.coalesceSessions,
    ensureReady: () => ensureReady(context),
    beforeForward: () => activateBackend(context),
    forward: (rows, temperature) =>
      feedAll(rollouts.forward, shape, rows, temperature, settings.maxAttentionElements),
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
