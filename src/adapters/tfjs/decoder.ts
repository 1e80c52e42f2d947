import * as tf from '@tensorflow/tfjs';
import { AbortedError, InvalidArgumentError, ProviderCallError, SearcherError } from '../../core/errors';
import { maxTokensAt } from '../../core/episode/token-budget';
import { createRandom, RANDOM_STREAMS, type Random } from '../../core/random';
import type { CallOptions } from '../../ports/common';
import type { GenerateTurnOptions, RolloutSession, TurnOutput } from '../../ports/policy-backend';
import type { TokenStep, Tokenizer } from '../../ports/types';
import { sampleToken } from './sampling';
import { activateBackend, ensureReady, type PolicyContext } from './state';
import type { Transformer } from './transformer';

/** One rollout: its tokens and, per layer, its keys and values laid out [heads, capacity, headWidth]. */
export interface RowState {
  sequence: number[];
  /** Tokens whose keys/values are in the cache; the rest are fed on the next forward. */
  cached: number;
  keys: Float32Array[];
  values: Float32Array[];
  capacity: number;
  random: Random;
  /** A turn of this row is being generated. */
  busy: boolean;
}

/** The sizes the cache layout depends on. */
export interface CacheShape {
  contextLength: number;
  layers: number;
  heads: number;
  headWidth: number;
  vocabSize: number;
}

interface JobRow {
  row: RowState;
  rolloutId: number;
  maxTokens: number;
  steps: TokenStep[];
  finish: TurnOutput['finishReason'] | null;
  /** The last decoded characters, to spot a stop string spelled out in byte tokens. */
  tail: string;
}

interface TurnJob {
  sessionIndex: number;
  /** Frees the job's rows for the next call. */
  settle: () => void;
  rows: JobRow[];
  options: GenerateTurnOptions;
  stopIds: Set<number>;
  stopStrings: string[];
  resolve: (outputs: TurnOutput[]) => void;
  reject: (error: unknown) => void;
}

/** Makes room for `needed` cached tokens; doubling keeps the copying amortised, the context bounds it. */
function growRow(row: RowState, needed: number, shape: CacheShape): void {
  if (needed <= row.capacity) return;
  const { contextLength, layers, heads, headWidth } = shape;
  const capacity = Math.min(contextLength, Math.max(needed, row.capacity * 2, 16));
  for (let layer = 0; layer < layers; layer++) {
    for (const cache of [row.keys, row.values]) {
      const grown = new Float32Array(heads * capacity * headWidth);
      const old = cache[layer]!;
      for (let head = 0; head < heads; head++) {
        grown.set(old.subarray(head * row.capacity * headWidth, (head * row.capacity + row.cached) * headWidth), head * capacity * headWidth);
      }
      cache[layer] = grown;
    }
  }
  row.capacity = capacity;
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
  const pastSize = rowCount * heads * pastLength * headWidth;
  const pastData = pastLength > 0 ? Array.from({ length: layers }, () => [new Float32Array(pastSize), new Float32Array(pastSize)] as const) : null;
  if (pastData) {
    rows.forEach((r, index) => {
      for (let layer = 0; layer < layers; layer++) {
        for (let head = 0; head < heads; head++) {
          const from = head * r.capacity * headWidth;
          const to = (index * heads + head) * pastLength * headWidth;
          pastData[layer]![0].set(r.keys[layer]!.subarray(from, from + r.cached * headWidth), to);
          pastData[layer]![1].set(r.values[layer]!.subarray(from, from + r.cached * headWidth), to);
        }
      }
    });
  }
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
      rows.forEach((r, index) => {
        growRow(r, r.cached + pending[index]!, shape);
        for (let head = 0; head < heads; head++) {
          const from = (index * heads + head) * chunkLength * headWidth;
          const to = (head * r.capacity + r.cached) * headWidth;
          r.keys[layer]!.set(keys.subarray(from, from + pending[index]! * headWidth), to);
          r.values[layer]!.set(values.subarray(from, from + pending[index]! * headWidth), to);
        }
      });
    }
    rows.forEach((r, index) => {
      r.cached += pending[index]!;
    });
    return rows.map((_, index) => logpData.slice(index * vocabSize, (index + 1) * vocabSize));
  } finally {
    tf.dispose([outputs.logp, ...outputs.keys, ...outputs.values]);
  }
}

/**
 * One forward over `rows` feeding their uncached tokens: log-probs [rows, vocabulary] at each row's
 * last token (at `temperature`, as `feed` computes them); the rows' caches then hold every token.
 * The tfjs forward is `feed`; onnx-rollouts.ts runs the same model through ONNX Runtime.
 */
export type RowsForward = (rows: RowState[], temperature: number) => Float32Array[] | Promise<Float32Array[]>;

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

/** Tags that are one token stop on that token; every stop string also stops when spelled out in bytes. */
function stopSets(tokenizer: Tokenizer, stopAfter: readonly string[]): { stopIds: Set<number>; stopStrings: string[] } {
  const stopIds = new Set<number>();
  const stopStrings: string[] = [];
  for (const stop of stopAfter) {
    const id = tokenizer.specialTokenId(stop);
    if (id !== undefined) stopIds.add(id);
    stopStrings.push(stop);
  }
  return { stopIds, stopStrings };
}

export function cacheShapeOf(context: PolicyContext): CacheShape {
  const { modelConfig } = context;
  return { contextLength: modelConfig.contextLength, layers: modelConfig.layers, heads: modelConfig.heads, headWidth: modelConfig.width / modelConfig.heads, vocabSize: modelConfig.vocabSize };
}

export interface Decoder {
  begin(promptTokenIds: readonly (readonly number[])[], callOptions?: CallOptions): Promise<RolloutSession>;
}

/**
 * Rollout sessions whose key/value caches live across turns. Turns asked for by concurrent
 * sessions wait in one queue, and one pump decodes them together: one forward per token step for
 * every row that is generating.
 */
export function createDecoder(context: PolicyContext, forward?: RowsForward): Decoder {
  const { tokenizer, modelConfig, settings, state } = context;
  const model = state.model;
  const shape = cacheShapeOf(context);
  const rowsForward: RowsForward = forward ?? ((rows, temperature) => feed(model, shape, rows, temperature));
  const { contextLength } = shape;
  const jobs: TurnJob[] = [];
  let pumping = false;

  /** Appends one sampled token to each row of `group` and marks the rows that are done. */
  const decodeStep = async (grouped: Array<{ job: TurnJob; entry: JobRow }>) => {
    await activateBackend(context);
    // A session that ended (or a turn aborted) while this forward waited has had its turns settled
    // and its caches freed: its rows leave the forward instead of failing the other sessions' turns.
    const group = grouped.filter((e) => jobs.includes(e.job));
    if (group.length === 0) return;
    const temperature = group[0]!.job.options.temperature;
    const logps = await feedAll(rowsForward, shape, group.map((e) => e.entry.row), temperature, settings.maxAttentionElements);
    group.forEach(({ job, entry }, index) => {
      // The ONNX Runtime forward is asynchronous: a session may have ended while it ran.
      if (!jobs.includes(job)) return;
      const logp = logps[index]!;
      const row = entry.row;
      const tokenId = sampleToken(logp, { temperature, topP: job.options.topP }, row.random);
      entry.steps.push({ tokenId, tokenText: tokenizer.tokenText(tokenId), logProb: logp[tokenId]!, position: row.sequence.length });
      row.sequence.push(tokenId);
      if (tokenId === tokenizer.eosTokenId) entry.finish = 'eos';
      else if (job.stopIds.has(tokenId)) entry.finish = 'stop';
      else if (job.stopStrings.length > 0) {
        // A tag spelled out in bytes stops generation as well as the tag's own token.
        entry.tail = (entry.tail + tokenizer.decode([tokenId])).slice(-64);
        if (job.stopStrings.some((stop) => entry.tail.endsWith(stop))) entry.finish = 'stop';
      }
      if (entry.finish === null && (entry.steps.length >= entry.maxTokens || row.sequence.length >= contextLength)) entry.finish = 'length';
    });
  };

  const pump = async () => {
    if (pumping) return;
    pumping = true;
    try {
      while (jobs.length > 0) {
        // Let sessions that are about to ask join this forward.
        await new Promise<void>((resolve) => setImmediate(resolve));
        for (let j = jobs.length - 1; j >= 0; j--) {
          const job = jobs[j]!;
          if (job.options.signal?.aborted) {
            jobs.splice(j, 1);
            job.settle();
            job.reject(new AbortedError('generateTurn', { cause: job.options.signal.reason }));
          }
        }
        const active = jobs.flatMap((job) => job.rows.filter((entry) => entry.finish === null).map((entry) => ({ job, entry })));
        // Rows feeding one token decode together; rows with a prompt or observation to absorb are
        // fed apart, so that one long chunk does not pad every other row. Without coalescing, each
        // session's rows are fed on their own (results independent of other sessions' timing).
        const forwards = new Map<string, typeof active>();
        for (const item of active) {
          const pending = item.entry.row.sequence.length - item.entry.row.cached === 1 ? 'one' : 'many';
          const key = `${item.job.options.temperature}|${pending}|${settings.coalesceSessions ? '' : item.job.sessionIndex}`;
          forwards.set(key, [...(forwards.get(key) ?? []), item]);
        }
        for (const group of forwards.values()) {
          try {
            await decodeStep(group);
          } catch (error) {
            // Only the turns that were in the failed forward fail; other sessions go on.
            const typed = SearcherError.isInstance(error) ? error : new ProviderCallError({ port: 'policy', provider: 'tfjs', message: `forward failed: ${error instanceof Error ? error.message : String(error)}`, isRetryable: false, cause: error });
            for (const job of new Set(group.map((e) => e.job))) {
              const at = jobs.indexOf(job);
              if (at >= 0) jobs.splice(at, 1);
              job.settle();
              job.reject(typed);
            }
          }
        }
        for (let j = jobs.length - 1; j >= 0; j--) {
          const job = jobs[j]!;
          if (job.rows.every((entry) => entry.finish !== null)) {
            jobs.splice(j, 1);
            job.settle();
            job.resolve(job.rows.map((entry) => ({ rolloutId: entry.rolloutId, steps: entry.steps, finishReason: entry.finish! })));
          }
        }
      }
    } finally {
      pumping = false;
    }
  };

  const checkTokenIds = (ids: readonly number[], argument: (t: number) => string) => {
    ids.forEach((id, t) => {
      if (!(Number.isInteger(id) && id >= 0 && id < modelConfig.vocabSize)) throw new InvalidArgumentError(argument(t), `token id ${id} is outside the vocabulary`);
    });
  };

  return {
    async begin(promptTokenIds, callOptions) {
      await ensureReady(context);
      if (callOptions?.signal?.aborted) throw new AbortedError('begin', { cause: callOptions.signal.reason });
      if (!Array.isArray(promptTokenIds) || promptTokenIds.length === 0) throw new InvalidArgumentError('promptTokenIds', 'must be a non-empty array of token id arrays');
      promptTokenIds.forEach((ids, i) => {
        if (ids.length === 0) throw new InvalidArgumentError(`promptTokenIds[${i}]`, 'a prompt needs at least one token');
        if (ids.length >= contextLength) {
          throw new InvalidArgumentError(`promptTokenIds[${i}]`, `has ${ids.length} tokens; the model's context is ${contextLength} and the policy must have room to answer`);
        }
        checkTokenIds(ids, (t) => `promptTokenIds[${i}][${t}]`);
      });
      const sessionIndex = state.sessionCounter++;
      const rows: RowState[] = promptTokenIds.map((ids, r) => ({
        sequence: [...ids],
        cached: 0,
        keys: Array.from({ length: shape.layers }, () => new Float32Array(0)),
        values: Array.from({ length: shape.layers }, () => new Float32Array(0)),
        capacity: 0,
        random: createRandom(state.samplingSeed, RANDOM_STREAMS.sampling, sessionIndex, r),
        busy: false,
      }));
      let ended = false;
      const rowOf = (id: number, argument: string) => {
        if (ended) throw new InvalidArgumentError('session', 'the session has ended');
        const row = Number.isInteger(id) ? rows[id] : undefined;
        if (!row) throw new InvalidArgumentError(argument, `no rollout ${id} in a session of ${rows.length}`);
        return row;
      };
      return {
        size: rows.length,
        async generateTurn(rolloutIds, turnOptions) {
          await ensureReady(context);
          if (turnOptions.signal?.aborted) throw new AbortedError('generateTurn', { cause: turnOptions.signal.reason });
          if (new Set(rolloutIds).size !== rolloutIds.length) throw new InvalidArgumentError('rolloutIds', 'lists a rollout twice');
          if (!(Number.isFinite(turnOptions.temperature) && turnOptions.temperature >= 0)) throw new InvalidArgumentError('temperature', `must be >= 0, got ${turnOptions.temperature}`);
          if (!(turnOptions.topP > 0 && turnOptions.topP <= 1)) throw new InvalidArgumentError('topP', `must be in (0, 1], got ${turnOptions.topP}`);
          const jobRows = rolloutIds.map((rolloutId, k): JobRow => {
            const row = rowOf(rolloutId, 'rolloutIds');
            const maxTokens = Math.min(maxTokensAt(turnOptions, k), contextLength - row.sequence.length);
            return { row, rolloutId, maxTokens, steps: [], finish: maxTokens <= 0 ? 'length' : null, tail: '' };
          });
          const busy = jobRows.find((r) => r.row.busy);
          if (busy) throw new InvalidArgumentError('rolloutIds', `rollout ${busy.rolloutId} is already generating a turn`);
          for (const r of jobRows) r.row.busy = true;
          const settle = () => {
            for (const r of jobRows) r.row.busy = false;
          };
          const { stopIds, stopStrings } = stopSets(tokenizer, turnOptions.stopAfter);
          const done = new Promise<TurnOutput[]>((resolve, reject) => jobs.push({ sessionIndex, settle, rows: jobRows, options: turnOptions, stopIds, stopStrings, resolve, reject }));
          void pump();
          return done;
        },
        async append(rolloutId, tokenIds) {
          const row = rowOf(rolloutId, 'rolloutId');
          if (row.busy) throw new InvalidArgumentError('rolloutId', `rollout ${rolloutId} is generating a turn; append after it returns`);
          if (row.sequence.length + tokenIds.length > contextLength) {
            throw new InvalidArgumentError('tokenIds', `appending ${tokenIds.length} tokens to rollout ${rolloutId} (${row.sequence.length} tokens) exceeds the model's context of ${contextLength}`);
          }
          checkTokenIds(tokenIds, (t) => `tokenIds[${t}]`);
          // Absorbed lazily: the next generateTurn feeds these tokens in the same forward.
          row.sequence.push(...tokenIds);
        },
        async end() {
          ended = true;
          // Turns still generating in this session end here, without touching other sessions.
          for (let j = jobs.length - 1; j >= 0; j--) {
            const job = jobs[j]!;
            if (job.sessionIndex !== sessionIndex) continue;
            jobs.splice(j, 1);
            job.settle();
            job.reject(new InvalidArgumentError('session', 'the session ended while a turn was generating'));
          }
          for (const row of rows) {
            row.keys = [];
            row.values = [];
          }
        },
      };
    },
  };
}
