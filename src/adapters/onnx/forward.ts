import type { ScheduledRow } from '../../rollout-engine/rollout-scheduler';
import {
  emptyKvCache,
  gatherKvCache,
  scatterKvCache,
  type KvCacheRow,
  type KvCacheShape,
} from '../../rollout-engine/kv-cache';
import type { CausalLmLayout } from './layout';
import { ort } from './runtime';

/** A sequence being fed and its key/value cache; `released` once its session ended (a forward in flight then drops its results). */
interface FeedRow extends KvCacheRow {
  sequence: number[];
  released?: boolean;
}

/** One rollout of a session. */
export interface OnnxRow extends ScheduledRow, FeedRow {}

export interface OnnxModel {
  session: ort.InferenceSession;
  layout: CausalLmLayout;
  shape: KvCacheShape & { vocabSize: number };
  /** Rows per forward. */
  maxBatchRows: number;
}

/** Logits of one forward: row i's token at chunk offset t is at `(i * chunkLength + t) * vocabSize`. */
interface ForwardLogits {
  logits: Float32Array;
  chunkLength: number;
  pending: number[];
}

const int64 = (values: ArrayLike<number>, dims: number[]) =>
  new ort.Tensor('int64', BigInt64Array.from(Array.from(values, (v) => BigInt(v))), dims);

/**
 * One forward of Optimum's causal LM over `rows`, feeding each row's uncached tokens after its
 * cached ones, and storing the new keys/values in the rows' caches. Rows' caches are padded to the
 * longest (past P) and their new tokens to the longest chunk (C); attention_mask is 0 on every
 * padding slot, so no real token attends to one, and position_ids carry each token's own position.
 */
async function forwardOnce(model: OnnxModel, rows: readonly FeedRow[]): Promise<ForwardLogits> {
  const { session, layout, shape } = model;
  const { layers, heads, headWidth, vocabSize } = shape;
  const pending = rows.map((r) => r.sequence.length - r.cached);
  const chunkLength = Math.max(...pending);
  const pastLength = Math.max(...rows.map((r) => r.cached));
  const total = pastLength + chunkLength;
  const ids = new Array<number>(rows.length * chunkLength);
  const positions = new Array<number>(rows.length * chunkLength);
  const mask = new Array<number>(rows.length * total).fill(0);
  rows.forEach((r, index) => {
    for (let j = 0; j < r.cached; j++) mask[index * total + j] = 1;
    for (let offset = 0; offset < chunkLength; offset++) {
      const position = Math.min(r.cached + offset, r.sequence.length - 1);
      ids[index * chunkLength + offset] = r.sequence[position]!;
      positions[index * chunkLength + offset] = position;
      if (offset < pending[index]!) mask[index * total + pastLength + offset] = 1;
    }
  });
  const feeds: Record<string, ort.Tensor> = {
    input_ids: int64(ids, [rows.length, chunkLength]),
    attention_mask: int64(mask, [rows.length, total]),
  };
  if (layout.hasPositionIds) feeds.position_ids = int64(positions, [rows.length, chunkLength]);
  for (let layer = 0; layer < layers; layer++) {
    feeds[`past_key_values.${layer}.key`] = new ort.Tensor(
      'float32',
      gatherKvCache(rows, layer, 'keys', pastLength, shape),
      [rows.length, heads, pastLength, headWidth],
    );
    feeds[`past_key_values.${layer}.value`] = new ort.Tensor(
      'float32',
      gatherKvCache(rows, layer, 'values', pastLength, shape),
      [rows.length, heads, pastLength, headWidth],
    );
  }
  const out = await session.run(feeds);
  const logits = out.logits!;
  if (logits.dims[2] !== vocabSize || logits.dims[1] !== chunkLength)
    throw new Error(
      `logits have shape [${logits.dims.join(', ')}], expected [${rows.length}, ${chunkLength}, ${vocabSize}]`,
    );
  // A row whose session ended while the forward ran keeps nothing.
  const targets = rows.map((r) => (r.released ? { cached: 0, ...emptyKvCache(shape) } : r));
  for (let layer = 0; layer < layers; layer++) {
    for (const [kind, name] of [
      ['keys', 'key'],
      ['values', 'value'],
    ] as const) {
      const present = out[`present.${layer}.${name}`]!;
      if (present.dims[2] !== total)
        throw new Error(
          `present.${layer}.${name} has ${present.dims[2]} positions, expected ${total} (past ${pastLength} + new ${chunkLength})`,
        );
      scatterKvCache(
        targets,
        layer,
        kind,
        present.data as Float32Array,
        { length: total, offset: pastLength },
        pending,
        shape,
      );
    }
  }
  rows.forEach((r, index) => {
    r.cached += pending[index]!;
  });
  const data = logits.data as Float32Array;
  // dispose drops the tensors' own references; onnxruntime-node hands outputs over as JavaScript typed arrays, which stay valid.
  for (const tensor of Object.values(out)) tensor.dispose?.();
  return { logits: data, chunkLength, pending };
}

/** log softmax(logits / temperature) of one vocabulary slice, accumulated in float64 (temperature 0 counts as 1). */
export function logSoftmax(
  logits: Float32Array,
  start: number,
  vocabSize: number,
  temperature: number,
): Float32Array {
  const scale = temperature > 0 ? 1 / temperature : 1;
  let max = -Infinity;
  for (let v = 0; v < vocabSize; v++) max = Math.max(max, logits[start + v]! * scale);
  let sum = 0;
  for (let v = 0; v < vocabSize; v++) sum += Math.exp(logits[start + v]! * scale - max);
  const logSum = max + Math.log(sum);
  const out = new Float32Array(vocabSize);
  for (let v = 0; v < vocabSize; v++) out[v] = logits[start + v]! * scale - logSum;
  return out;
}

/**
 * Splits rows into forwards: at most `maxBatchRows` each, and, for a graph without position_ids
 * (positions then follow the past length), only rows with the same cached length together.
 */
function batches(model: OnnxModel, rows: readonly FeedRow[]): number[][] {
  const groups = new Map<string, number[]>();
  rows.forEach((r, index) => {
    const key = model.layout.hasPositionIds ? '' : String(r.cached);
    groups.set(key, [...(groups.get(key) ?? []), index]);
  });
  const out: number[][] = [];
  for (const group of groups.values())
    for (let start = 0; start < group.length; start += model.maxBatchRows)
      out.push(group.slice(start, start + model.maxBatchRows));
  return out;
}

/** Feeds every row's uncached tokens; log-probs over the vocabulary at each row's last token. */
export async function forwardLast(
  model: OnnxModel,
  rows: readonly OnnxRow[],
  temperature: number,
): Promise<Float32Array[]> {
  const out = new Array<Float32Array>(rows.length);
  for (const batch of batches(model, rows)) {
    const { logits, chunkLength, pending } = await forwardOnce(
      model,
      batch.map((i) => rows[i]!),
    );
    batch.forEach((rowIndex, k) => {
      out[rowIndex] = logSoftmax(
        logits,
        (k * chunkLength + pending[k]! - 1) * model.shape.vocabSize,
        model.shape.vocabSize,
        temperature,
      );
    });
  }
  return out;
}

/**
 * Log-probs of the tokens at `positions` of each full sequence (one forward per batch, no cache
 * kept): the token at position p is scored by the logits at p - 1.
 */
export async function scoreSequences(
  model: OnnxModel,
  inputIds: readonly (readonly number[])[],
  positions: readonly (readonly number[])[],
  temperature: number,
): Promise<number[][]> {
  const rows: FeedRow[] = inputIds.map((ids) => ({
    sequence: [...ids],
    cached: 0,
    ...emptyKvCache(model.shape),
  }));
  const out: number[][] = inputIds.map(() => []);
  const { vocabSize } = model.shape;
  for (const batch of batches(model, rows)) {
    const { logits, chunkLength } = await forwardOnce(
      model,
      batch.map((i) => rows[i]!),
    );
    batch.forEach((rowIndex, k) => {
      const sequence = inputIds[rowIndex]!;
      out[rowIndex] = positions[rowIndex]!.map(
        (p) =>
          logSoftmax(logits, (k * chunkLength + p - 1) * vocabSize, vocabSize, temperature)[sequence[p]!]!,
      );
    });
    // The cache of a scored sequence is not kept.
    for (const i of batch) Object.assign(rows[i]!, emptyKvCache(model.shape));
  }
  return out;
}
