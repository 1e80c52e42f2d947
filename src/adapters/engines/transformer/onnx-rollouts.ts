import type * as Ort from 'onnxruntime-node';
import { ProviderCallError } from '../../../core/errors';
import { ONNX_NAMES, type OnnxRuntime } from '../onnx-graph/index';
import type { CacheShape, RolloutEngine, RowState, RowsForward } from '../engine';
import { checkGraphWeights } from './onnx-weights';
import { MASKED, type Transformer } from './transformer';
import { NO_FEEDS, weightSessions } from './weight-sessions';

// Rollouts of the tfjs Transformer through ONNX Runtime: the same chunk forward as an ONNX graph
// (onnx-graph/transformer-graph.ts) on sessions that always hold or take the current tfjs weights
// (weight-sessions.ts: the weights as constants of sessions made per version of the weights, or as
// inputs past CONSTANT_WEIGHT_BYTES), so that every rollout samples from the weights `logProbs`
// scores with.

export interface OnnxRolloutSettings {
  /** ONNX Runtime's intra-op threads. */
  intraOpThreads: number;
  /** Weight bytes up to which the weights are constants of the sessions (default CONSTANT_WEIGHT_BYTES); for tests. */
  constantWeightBytes?: number;
}

/**
 * The key/value caches of rows decoding together, in one block per layer laid out [rows, heads,
 * capacity, headWidth]: each row's slice is its RowState cache ([heads, capacity, headWidth]), and
 * the block is fed to the session as the past as it is, without gathering rows every step.
 */
interface Slab {
  rows: RowState[];
  capacity: number;
  keys: Float32Array[];
  values: Float32Array[];
  keyTensors: Ort.Tensor[];
  valueTensors: Ort.Tensor[];
}

/**
 * Cache capacity for `needed` tokens, at most the context. Every slot is attended to (masked past
 * the row's own cache), so the capacity grows in small steps; each step copies the caches once.
 */
const CAPACITY_STEP = 32;
function capacityFor(needed: number, contextLength: number): number {
  return Math.min(Math.ceil(needed / CAPACITY_STEP) * CAPACITY_STEP, contextLength);
}

/**
 * Slab blocks of rollouts that ended or moved to a bigger slab, by length, for the next slab of
 * that size: a rollout of 64 new tokens grows its cache twice, and allocating those blocks afresh
 * (megabytes of ArrayBuffers) drove V8 into a full collection about twice per rollout.
 */
const POOLED_BLOCK_BYTES = 64 * 2 ** 20;
function createBlockPool() {
  const free = new Map<number, Float32Array[]>();
  let pooledBytes = 0;
  return {
    /** A block of `length` floats, and whether it is all zeros (a new one) or holds an earlier slab's values (a pooled one). */
    take(length: number): { block: Float32Array; zeroed: boolean } {
      const block = free.get(length)?.pop();
      if (!block) return { block: new Float32Array(length), zeroed: true };
      pooledBytes -= block.byteLength;
      return { block, zeroed: false };
    },
    give(block: Float32Array): void {
      if (pooledBytes + block.byteLength > POOLED_BLOCK_BYTES) return;
      pooledBytes += block.byteLength;
      const blocks = free.get(block.length);
      if (blocks) blocks.push(block);
      else free.set(block.length, [block]);
    },
  };
}

/**
 * One forward's input tensors for a (rows, chunk, capacity) shape, over arrays refilled in place:
 * decoding keeps the same shape for CAPACITY_STEP tokens at a time.
 */
interface ChunkInputs {
  key: string;
  tokens: BigInt64Array;
  positions: BigInt64Array;
  lastIndex: BigInt64Array;
  mask: Float32Array;
  temperature: Float32Array;
  feeds: Record<string, Ort.Tensor>;
}

/** The ONNX Runtime rollout engine (`rollouts: 'onnx'`): a session per version of the weights, made when a forward first needs it. */
export async function createOnnxRolloutEngine(
  ort: OnnxRuntime,
  model: Transformer,
  shape: CacheShape,
  settings: OnnxRolloutSettings,
): Promise<RolloutEngine> {
  const { layers, heads, headWidth, vocabSize, contextLength } = shape;
  checkGraphWeights(model, 'onnx rollouts');
  const sessions = weightSessions(ort, model, settings);
  // Made now, so that a graph ONNX Runtime refuses fails the engine's creation, not the first rollout.
  sessions.done(await sessions.acquire());
  const pool = createBlockPool();
  const slabs = new Set<Slab>();
  /** Pools the blocks of slabs no row reads any more (every row released or moved on). */
  const sweep = () => {
    for (const slab of slabs) {
      if (slab.rows.some((r) => r.keys[0]?.buffer === slab.keys[0]!.buffer)) continue;
      slabs.delete(slab);
      for (const block of [...slab.keys, ...slab.values]) pool.give(block);
    }
  };

  const slabOf = new WeakMap<RowState, { slab: Slab; slot: number }>();
  const rowSize = (capacity: number) => heads * capacity * headWidth;
  /** The slab holding exactly `rows` in this order with room for `needed` tokens, made (copying the rows' caches) if there is none. */
  const slabFor = (rows: RowState[], needed: number): Slab => {
    const first = slabOf.get(rows[0]!);
    const reuse =
      first &&
      first.slab.rows.length === rows.length &&
      first.slab.capacity >= needed &&
      rows.every((r, i) => {
        const at = slabOf.get(r);
        return at?.slab === first.slab && at.slot === i && r.keys[0]?.buffer === first.slab.keys[0]!.buffer;
      });
    if (reuse) return first.slab;
    const capacity = capacityFor(needed, contextLength);
    const size = rowSize(capacity);
    let zeroed = true;
    const block = () =>
      Array.from({ length: layers }, () => {
        const taken = pool.take(rows.length * size);
        zeroed &&= taken.zeroed;
        return taken.block;
      });
    const slab: Slab = { rows, capacity, keys: block(), values: block(), keyTensors: [], valueTensors: [] };
    rows.forEach((r, slot) => {
      for (let layer = 0; layer < layers; layer++) {
        for (const [from, to] of [
          [r.keys, slab.keys],
          [r.values, slab.values],
        ] as const) {
          const old = from[layer]!;
          for (let head = 0; head < heads; head++) {
            const at = slot * size + head * capacity * headWidth;
            to[layer]!.set(
              old.subarray(head * r.capacity * headWidth, (head * r.capacity + r.cached) * headWidth),
              at,
            );
            // Slots past a row's cache are masked (weight exactly 0), but 0 * NaN is not 0: what a
            // pooled block held (a diverged model's values) must not poison this slab.
            if (!zeroed) to[layer]!.fill(0, at + r.cached * headWidth, at + capacity * headWidth);
          }
          from[layer] = to[layer]!.subarray(slot * size, (slot + 1) * size);
        }
      }
      r.capacity = capacity;
      slabOf.set(r, { slab, slot });
    });
    const dims = [rows.length, heads, capacity, headWidth];
    slab.keyTensors = slab.keys.map((k) => new ort.Tensor('float32', k, dims));
    slab.valueTensors = slab.values.map((v) => new ort.Tensor('float32', v, dims));
    sweep();
    slabs.add(slab);
    return slab;
  };

  let inputs: ChunkInputs | null = null;
  const inputsFor = (rowCount: number, chunkLength: number, pastLength: number): ChunkInputs => {
    const key = `${rowCount}|${chunkLength}|${pastLength}`;
    if (inputs?.key === key) return inputs;
    const keyCount = pastLength + chunkLength;
    const tokens = new BigInt64Array(rowCount * chunkLength);
    const positions = new BigInt64Array(rowCount * chunkLength);
    const lastIndex = new BigInt64Array(rowCount);
    const mask = new Float32Array(rowCount * chunkLength * keyCount);
    const temperature = new Float32Array(1);
    inputs = {
      key,
      tokens,
      positions,
      lastIndex,
      mask,
      temperature,
      feeds: {
        [ONNX_NAMES.tokens]: new ort.Tensor('int64', tokens, [rowCount, chunkLength]),
        [ONNX_NAMES.positions]: new ort.Tensor('int64', positions, [rowCount, chunkLength]),
        [ONNX_NAMES.mask]: new ort.Tensor('float32', mask, [rowCount, 1, chunkLength, keyCount]),
        // The one-token forward has no last index: each row is its last token.
        ...(chunkLength > 1 && { [ONNX_NAMES.lastIndex]: new ort.Tensor('int64', lastIndex, [rowCount]) }),
        [ONNX_NAMES.temperature]: new ort.Tensor('float32', temperature, []),
      },
    };
    return inputs;
  };
  const fetches = [ONNX_NAMES.logProbs, ONNX_NAMES.present];

  /** One forward of `rows` on `session`; nothing in it waits between filling the shared inputs and the run reading them. */
  const forwardOn = async (
    session: Ort.InferenceSession,
    weightFeeds: Record<string, Ort.Tensor>,
    rows: RowState[],
    temperature: number,
  ): Promise<Float32Array[]> => {
    const pending = rows.map((r) => r.sequence.length - r.cached);
    const chunkLength = Math.max(...pending);
    const slab = slabFor(rows, Math.max(...rows.map((r, index) => r.cached + pending[index]!)));
    const { capacity } = slab;
    const rowCount = rows.length;
    // The prompts' forward, when no row has a cache yet, reads no past: its slots would all be masked.
    const pastLength = rows.some((r) => r.cached > 0) ? capacity : 0;
    const {
      tokens,
      positions,
      lastIndex,
      mask,
      feeds,
      temperature: temperatureInput,
    } = inputsFor(rowCount, chunkLength, pastLength);
    // As the tfjs forward: rows with fewer new tokens are right-padded with their last one, and
    // each row's log-probs are read at its own last token; padding keys are never cached.
    const keyCount = pastLength + chunkLength;
    mask.fill(0);
    rows.forEach((r, index) => {
      lastIndex[index] = BigInt(index * chunkLength + pending[index]! - 1);
      for (let offset = 0; offset < chunkLength; offset++) {
        const position = Math.min(r.cached + offset, r.sequence.length - 1);
        tokens[index * chunkLength + offset] = BigInt(r.sequence[position]!);
        positions[index * chunkLength + offset] = BigInt(position);
        // The past slots past the row's own cache, and the chunk's later tokens, are hidden.
        const base = (index * chunkLength + offset) * keyCount;
        mask.fill(MASKED, base + r.cached, base + pastLength);
        mask.fill(MASKED, base + pastLength + offset + 1, base + keyCount);
      }
    });
    // tfjs divides by the temperature only when it is neither 0 (greedy) nor 1; dividing by 1 is exact.
    temperatureInput[0] = temperature > 0 ? temperature : 1;
    const noPast =
      pastLength === 0
        ? new ort.Tensor('float32', new Float32Array(0), [rowCount, heads, 0, headWidth])
        : null;
    for (let layer = 0; layer < layers; layer++) {
      feeds[ONNX_NAMES.pastKeys(layer)] = noPast ?? slab.keyTensors[layer]!;
      feeds[ONNX_NAMES.pastValues(layer)] = noPast ?? slab.valueTensors[layer]!;
    }
    let results: Ort.InferenceSession.ReturnType;
    try {
      results = await session.run(weightFeeds === NO_FEEDS ? feeds : { ...weightFeeds, ...feeds }, fetches);
    } catch (error) {
      throw new ProviderCallError({
        port: 'policy',
        provider: 'tfjs',
        message: `ONNX Runtime rollout forward failed: ${error instanceof Error ? error.message : String(error)}`,
        isRetryable: false,
        cause: error,
      });
    }
    // present: [2 * layers * rows, heads, chunk, headWidth], layer by layer, keys then values.
    const present = results[ONNX_NAMES.present]!.data as Float32Array;
    const size = rowSize(capacity);
    const perRows = rowCount * heads * chunkLength * headWidth;
    for (let layer = 0; layer < layers; layer++) {
      for (const [kind, block] of [slab.keys[layer]!, slab.values[layer]!].entries()) {
        const source = (2 * layer + kind) * perRows;
        rows.forEach((r, index) => {
          const count = pending[index]! * headWidth;
          for (let head = 0; head < heads; head++) {
            // A plain loop for a few tokens (most writes are one, headWidth floats), shorter than a subarray costs to make.
            const from = source + (index * heads + head) * chunkLength * headWidth;
            const to = index * size + (head * capacity + r.cached) * headWidth;
            if (count > 4 * headWidth) block.set(present.subarray(from, from + count), to);
            else for (let i = 0; i < count; i++) block[to + i] = present[from + i]!;
          }
        });
      }
    }
    rows.forEach((r, index) => {
      r.cached += pending[index]!;
    });
    const logProbs = results[ONNX_NAMES.logProbs]!.data as Float32Array;
    return rows.map((_, index) => logProbs.subarray(index * vocabSize, (index + 1) * vocabSize));
  };
  const forward: RowsForward = async (rows, temperature) => {
    const entry = await sessions.acquire();
    try {
      const oneToken = rows.every((r) => r.sequence.length - r.cached === 1);
      return await forwardOn(oneToken ? entry.token : entry.chunk, entry.weightFeeds, rows, temperature);
    } finally {
      sessions.done(entry);
    }
  };

  return { forward, dispose: () => sessions.dispose() };
}
