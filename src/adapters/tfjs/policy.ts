import * as tf from '@tensorflow/tfjs';
import { z } from 'zod';
import { AbortedError, InvalidArgumentError, PortOutputError, ProviderCallError, SearcherError, settingsError } from '../../core/errors';
import { maxTokensAt } from '../../core/episode/token-budget';
import { createProtocolTokenizer, createVocabularyTokenizer } from '../../core/protocol/tokenizer';
import { PROTOCOL_TAG_STRINGS } from '../../core/protocol/tags';
import { createRandom, hashString, type Random } from '../../core/random';
import type { CallOptions } from '../../ports/common';
import type {
  GenerateTurnOptions,
  LogProbBatch,
  LossFunction,
  PolicyBackend,
  PolicyCheckpoint,
  RolloutSession,
  TurnOutput,
  UpdateOptions,
  UpdateResult,
} from '../../ports/policy-backend';
import { AdamW, type AdamWSettings } from './adamw';
import { activateTfjsBackend, selectTfjsBackend, TFJS_BACKENDS, type BackendModuleLoader, type TfjsBackendName } from './backends';
import { Transformer, type TransformerConfig } from './transformer';
import type { TokenStep, Tokenizer } from '../../ports/types';

export const CHECKPOINT_FORMAT = 'searcher-rl.tfjs-transformer.v1';

const positiveInt = () => z.number().int().positive();

export const tfjsPolicySettingsSchema = z
  .object({
    model: z
      .object({
        layers: positiveInt().default(2),
        width: positiveInt().default(64),
        heads: positiveInt().default(4),
        contextLength: positiveInt().default(512),
        /** Default 4 * width. */
        mlpWidth: positiveInt().optional(),
      })
      .strict()
      .default({ layers: 2, width: 64, heads: 4, contextLength: 512 }),
    optimizer: z
      .object({
        learningRate: z.number().positive().default(1e-3),
        beta1: z.number().min(0).lt(1).default(0.9),
        beta2: z.number().min(0).lt(1).default(0.999),
        epsilon: z.number().positive().default(1e-8),
        weightDecay: z.number().min(0).default(0.01),
        maxGradNorm: z.number().positive().nullable().default(1),
        warmupSteps: z.number().int().min(0).default(0),
      })
      .strict()
      .default({ learningRate: 1e-3, beta1: 0.9, beta2: 0.999, epsilon: 1e-8, weightDecay: 0.01, maxGradNorm: 1, warmupSteps: 0 }),
    /** Seeds the initial weights and the sampling streams. */
    seed: z.number().int().default(0),
    /** `auto`: tfjs-node-gpu, tfjs-node, wasm, cpu, the first that initialises. */
    backend: z.enum(['auto', ...TFJS_BACKENDS]).default('auto'),
    /**
     * Decode the turns of concurrent sessions (one per group in the streaming pipeline) in shared
     * forwards. Faster; the last bits of a log-prob then depend on which sessions shared a forward,
     * so with ports whose latency varies, seeded runs can drift apart. `false`: each session alone.
     */
    coalesceSessions: z.boolean().default(true),
    /** Bound on rows x tokens x keys x heads per forward (attention scores), to cap memory. */
    maxAttentionElements: positiveInt().default(16_000_000),
  })
  .strict();

export type TfjsPolicySettings = z.input<typeof tfjsPolicySettingsSchema>;

export interface TfjsPolicy extends PolicyBackend {
  readonly provider: 'tfjs';
  /** The backend in use (`tensorflow-gpu`, `tensorflow`, `wasm` or `cpu`) and those passed over. */
  readonly backend: { name: TfjsBackendName; skipped: Array<{ name: TfjsBackendName; reason: string }> };
  readonly modelConfig: TransformerConfig;
  readonly parameterCount: number;
  /** Optimizer steps taken (skipped steps not counted). */
  readonly optimizerStep: number;
  /**
   * The gradient `update` would apply (before clipping), by parameter name, without changing
   * anything: for finite-difference checks and debugging.
   */
  gradients(batch: LogProbBatch, lossFn: LossFunction, options?: UpdateOptions): Promise<{ value: number; gradients: Record<string, Float32Array> }>;
  /** Starts a new optimizer (zero moments, step 0), optionally with other settings (e.g. after SFT). */
  resetOptimizer(settings?: Partial<AdamWSettings>): void;
  /** Frees the weights and optimizer state. */
  dispose(): void;
}

export interface CreateTfjsPolicyOptions {
  /** The tokenizer (default: the byte-level protocol tokenizer, every tag one token). */
  tokenizer?: Tokenizer;
  /** Loads backend packages; for tests. */
  loadBackendModule?: BackendModuleLoader;
}

interface RowState {
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

interface TurnJob {
  sessionIndex: number;
  /** Frees the job's rows for the next call. */
  settle: () => void;
  rows: Array<{ row: RowState; rolloutId: number; maxTokens: number; steps: TokenStep[]; finish: TurnOutput['finishReason'] | null; tail: string }>;
  options: GenerateTurnOptions;
  stopIds: Set<number>;
  stopStrings: string[];
  resolve: (outputs: TurnOutput[]) => void;
  reject: (error: unknown) => void;
}

/**
 * A trainable causal transformer Searcher on TensorFlow.js. Rollouts are sessions whose key/value
 * caches live across turns; concurrent sessions (one per group in the streaming pipeline) decode
 * together, one forward per token step for all of them. Sampling is temperature + top-p from a
 * seeded stream per rollout, and each TokenStep's log-prob is log softmax(logits / T), the same
 * number `logProbs` computes with a full forward.
 */
export async function createTfjsPolicy(settings: TfjsPolicySettings = {}, options: CreateTfjsPolicyOptions = {}): Promise<TfjsPolicy> {
  const parsed = tfjsPolicySettingsSchema.safeParse(settings);
  if (!parsed.success) throw settingsError('createTfjsPolicy', parsed.error.issues);
  const s = parsed.data;
  if (s.model.width % s.model.heads !== 0) throw new InvalidArgumentError('model.width', `must be divisible by model.heads (${s.model.heads}), got ${s.model.width}`);
  const tokenizer = options.tokenizer ?? createProtocolTokenizer();
  const selected = await selectTfjsBackend(s.backend, options.loadBackendModule);
  const modelConfig: TransformerConfig = {
    vocabSize: tokenizer.vocabSize,
    contextLength: s.model.contextLength,
    layers: s.model.layers,
    width: s.model.width,
    heads: s.model.heads,
    mlpWidth: s.model.mlpWidth ?? 4 * s.model.width,
  };
  const model = new Transformer(modelConfig, createRandom(s.seed, 1));
  let optimizer = new AdamW(model.parameters, s.optimizer);
  const C = modelConfig.contextLength;
  // A hash of every token's text and the end-of-sequence id: a checkpoint only loads with the tokenizer it was trained with.
  const tokenizerFingerprint = hashString([...Array.from({ length: tokenizer.vocabSize }, (_, id) => tokenizer.tokenText(id)), `eos ${tokenizer.eosTokenId}`].join('\u0000'))
    .toString(16)
    .padStart(8, '0');
  const H = modelConfig.heads;
  const dh = model.headWidth;
  const L = modelConfig.layers;
  let sessionCounter = 0;
  let samplingSeed = s.seed;
  let disposed = false;
  const ensureReady = async () => {
    if (disposed) throw new InvalidArgumentError('policy', 'this TfjsPolicy was disposed');
    await activateTfjsBackend(selected.tfName);
  };

  // ---- decoding -------------------------------------------------------------------------------
  const jobs: TurnJob[] = [];
  let pumping = false;

  const growRow = (row: RowState, needed: number) => {
    if (needed <= row.capacity) return;
    const capacity = Math.min(C, Math.max(needed, row.capacity * 2, 16));
    for (let l = 0; l < L; l++) {
      for (const which of [row.keys, row.values]) {
        const next = new Float32Array(H * capacity * dh);
        const old = which[l]!;
        for (let h = 0; h < H; h++) next.set(old.subarray(h * row.capacity * dh, (h * row.capacity + row.cached) * dh), h * capacity * dh);
        which[l] = next;
      }
    }
    row.capacity = capacity;
  };

  /** One forward over `rows` feeding their uncached tokens; returns log-probs [rows, V] at their last token. */
  const feed = (rows: RowState[], temperature: number): Float32Array[] => {
    const lengths = rows.map((r) => r.sequence.length - r.cached);
    const m = Math.max(...lengths);
    const P = Math.max(...rows.map((r) => r.cached));
    const S = rows.length;
    const tokenData = new Int32Array(S * m);
    const positionData = new Int32Array(S * m);
    rows.forEach((r, s) => {
      for (let u = 0; u < m; u++) {
        const p = Math.min(r.cached + u, r.sequence.length - 1);
        tokenData[s * m + u] = r.sequence[p]!;
        positionData[s * m + u] = p;
      }
    });
    const pastData = P > 0 ? Array.from({ length: L }, (_, l) => [new Float32Array(S * H * P * dh), new Float32Array(S * H * P * dh)] as const) : null;
    if (pastData) {
      rows.forEach((r, s) => {
        for (let l = 0; l < L; l++) {
          for (let h = 0; h < H; h++) {
            const from = h * r.capacity * dh;
            const to = (s * H + h) * P * dh;
            pastData[l]![0].set(r.keys[l]!.subarray(from, from + r.cached * dh), to);
            pastData[l]![1].set(r.values[l]!.subarray(from, from + r.cached * dh), to);
          }
        }
      });
    }
    // Tensors out of tidy, arrays read outside it (tidy walks every element of a returned array).
    const outputs = tf.tidy(() => {
      const past = pastData && {
        keys: pastData.map(([k]) => tf.tensor4d(k, [S, H, P, dh])),
        values: pastData.map(([, v]) => tf.tensor4d(v, [S, H, P, dh])),
      };
      const { logits, cache } = model.forwardChunk(tf.tensor2d(tokenData, [S, m], 'int32'), tf.tensor2d(positionData, [S, m], 'int32'), past, rows.map((r) => r.cached));
      const lastIndex = tf.tensor1d(rows.map((_, s) => s * m + lengths[s]! - 1), 'int32');
      const last = tf.gather(logits, lastIndex);
      return { logp: tf.logSoftmax(temperature > 0 && temperature !== 1 ? tf.div(last, temperature) : last), keys: cache.keys, values: cache.values };
    });
    try {
      const logpData = outputs.logp.dataSync() as Float32Array;
      for (let l = 0; l < L; l++) {
        const k = outputs.keys[l]!.dataSync() as Float32Array;
        const v = outputs.values[l]!.dataSync() as Float32Array;
        rows.forEach((r, s) => {
          growRow(r, r.cached + lengths[s]!);
          for (let h = 0; h < H; h++) {
            const from = (s * H + h) * m * dh;
            const to = (h * r.capacity + r.cached) * dh;
            r.keys[l]!.set(k.subarray(from, from + lengths[s]! * dh), to);
            r.values[l]!.set(v.subarray(from, from + lengths[s]! * dh), to);
          }
        });
      }
      rows.forEach((r, s) => {
        r.cached += lengths[s]!;
      });
      const V = modelConfig.vocabSize;
      return rows.map((_, s) => logpData.slice(s * V, (s + 1) * V));
    } finally {
      tf.dispose([outputs.logp, ...outputs.keys, ...outputs.values]);
    }
  };

  /** Splits rows into forwards that keep the attention scores under the memory bound. */
  const feedAll = (rows: RowState[], temperature: number): Float32Array[] => {
    const out: Float32Array[] = [];
    let start = 0;
    while (start < rows.length) {
      let end = start + 1;
      const cost = (a: number, b: number) => {
        const slice = rows.slice(a, b);
        const m = Math.max(...slice.map((r) => r.sequence.length - r.cached));
        const P = Math.max(...slice.map((r) => r.cached));
        return (b - a) * H * m * (P + m);
      };
      while (end < rows.length && cost(start, end + 1) <= s.maxAttentionElements) end++;
      out.push(...feed(rows.slice(start, end), temperature));
      start = end;
    }
    return out;
  };

  const sample = (logp: Float32Array, temperature: number, topP: number, random: Random): number => {
    if (temperature === 0) {
      let best = 0;
      for (let i = 1; i < logp.length; i++) if (logp[i]! > logp[best]!) best = i;
      return best;
    }
    if (topP >= 1) {
      let u = random.nextFloat();
      for (let i = 0; i < logp.length; i++) {
        u -= Math.exp(logp[i]!);
        if (u < 0) return i;
      }
      return logp.length - 1;
    }
    const order = Array.from(logp.keys()).sort((a, b) => logp[b]! - logp[a]! || a - b);
    let mass = 0;
    let cut = 0;
    while (cut < order.length && mass < topP) mass += Math.exp(logp[order[cut++]!]!);
    let u = random.nextFloat() * mass;
    for (let i = 0; i < cut; i++) {
      u -= Math.exp(logp[order[i]!]!);
      if (u < 0) return order[i]!;
    }
    return order[cut - 1]!;
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
        const active = jobs.flatMap((job) => job.rows.filter((r) => r.finish === null).map((r) => ({ job, r })));
        // Rows feeding one token decode together; rows with a prompt or observation to absorb are
        // fed apart, so that one long chunk does not pad every other row. Without coalescing, each
        // session's rows are fed on their own (results independent of other sessions' timing).
        const forwards = new Map<string, typeof active>();
        for (const entry of active) {
          const pending = entry.r.row.sequence.length - entry.r.row.cached === 1 ? 'one' : 'many';
          const key = `${entry.job.options.temperature}|${pending}|${s.coalesceSessions ? '' : entry.job.sessionIndex}`;
          forwards.set(key, [...(forwards.get(key) ?? []), entry]);
        }
        for (const group of forwards.values()) {
          const temperature = group[0]!.job.options.temperature;
          try {
            await activateTfjsBackend(selected.tfName);
            const logps = feedAll(group.map((e) => e.r.row), temperature);
            group.forEach(({ job, r }, i) => {
              const logp = logps[i]!;
              const tokenId = sample(logp, temperature, job.options.topP, r.row.random);
              r.steps.push({ tokenId, tokenText: tokenizer.tokenText(tokenId), logProb: logp[tokenId]!, position: r.row.sequence.length });
              r.row.sequence.push(tokenId);
              if (tokenId === tokenizer.eosTokenId) r.finish = 'eos';
              else if (job.stopIds.has(tokenId)) r.finish = 'stop';
              else if (job.stopStrings.length > 0) {
                // A tag spelled out in bytes stops generation as well as the tag's own token.
                r.tail = (r.tail + tokenizer.decode([tokenId])).slice(-64);
                if (job.stopStrings.some((stop) => r.tail.endsWith(stop))) r.finish = 'stop';
              }
              if (r.finish === null && (r.steps.length >= r.maxTokens || r.row.sequence.length >= C)) r.finish = 'length';
            });
          } catch (error) {
            // Only the turns that were in the failed forward fail; other sessions go on.
            const failed = new Set(group.map((e) => e.job));
            const typed = SearcherError.isInstance(error) ? error : new ProviderCallError({ port: 'policy', provider: 'tfjs', message: `forward failed: ${error instanceof Error ? error.message : String(error)}`, isRetryable: false, cause: error });
            for (const job of failed) {
              const at = jobs.indexOf(job);
              if (at >= 0) jobs.splice(at, 1);
              job.settle();
              job.reject(typed);
            }
          }
        }
        for (let j = jobs.length - 1; j >= 0; j--) {
          const job = jobs[j]!;
          if (job.rows.every((r) => r.finish !== null)) {
            jobs.splice(j, 1);
            job.settle();
            job.resolve(job.rows.map((r) => ({ rolloutId: r.rolloutId, steps: r.steps, finishReason: r.finish! })));
          }
        }
      }
    } finally {
      pumping = false;
    }
  };

  const stopSets = (stopAfter: readonly string[]) => {
    const stopIds = new Set<number>();
    const stopStrings: string[] = [];
    for (const stop of stopAfter) {
      const id = tokenizer.specialTokenId(stop);
      if (id !== undefined) stopIds.add(id);
      stopStrings.push(stop);
    }
    return { stopIds, stopStrings };
  };

  // ---- scoring and training -------------------------------------------------------------------
  const checkBatch = (batch: LogProbBatch) => {
    if (!batch || !Array.isArray(batch.inputIds) || !Array.isArray(batch.positions) || batch.inputIds.length !== batch.positions.length) {
      throw new InvalidArgumentError('batch', 'needs inputIds and positions arrays of the same length');
    }
    batch.inputIds.forEach((ids, i) => {
      if (ids.length > C) throw new InvalidArgumentError(`batch.inputIds[${i}]`, `has ${ids.length} tokens; the model's context is ${C}`);
      ids.forEach((id, t) => {
        if (!(Number.isInteger(id) && id >= 0 && id < modelConfig.vocabSize)) throw new InvalidArgumentError(`batch.inputIds[${i}][${t}]`, `token id ${id} is outside the vocabulary (0..${modelConfig.vocabSize - 1})`);
      });
      batch.positions[i]!.forEach((p, k) => {
        if (!(Number.isInteger(p) && p >= 1 && p < ids.length)) throw new InvalidArgumentError(`batch.positions[${i}][${k}]`, `must be in 1..${ids.length - 1}, got ${p}`);
      });
    });
    const t = batch.temperature ?? 1;
    if (!(Number.isFinite(t) && t >= 0)) throw new InvalidArgumentError('batch.temperature', `must be >= 0, got ${t}`);
    return t === 0 ? 1 : t;
  };

  /** Right-padded ids and a [B*T, V] one-hot of each scored position's token at the row before it. */
  const denseBatch = (rows: number[][], positions: number[][], weights?: number[][]) => {
    const B = rows.length;
    const T = Math.max(...rows.map((r) => r.length));
    const V = modelConfig.vocabSize;
    const ids = new Int32Array(B * T);
    rows.forEach((r, i) => ids.set(r, i * T));
    // The token each scored row predicts (-1 elsewhere: an all-zero one-hot row), made on the device.
    const targets = new Int32Array(B * T).fill(-1);
    const weight = new Float32Array(B * T);
    positions.forEach((row, i) =>
      row.forEach((p, k) => {
        const at = i * T + p - 1;
        targets[at] = rows[i]![p]!;
        weight[at] = weights ? weights[i]![k]! : 1;
      }),
    );
    return { ids: tf.tensor2d(ids, [B, T], 'int32'), idValues: ids, pick: tf.oneHot(tf.tensor1d(targets, 'int32'), V) as tf.Tensor2D, weight: tf.tensor1d(weight), T };
  };

  const scoredLogProbs = (logits: tf.Tensor2D, pick: tf.Tensor2D, temperature: number) => {
    const logp = tf.logSoftmax(temperature !== 1 ? tf.div(logits, temperature) : logits);
    return { logp, token: tf.sum(tf.mul(logp, pick), 1) };
  };

  const rowBatches = (batch: LogProbBatch): number[][] => {
    // Rows per forward: attention scores B * heads * T^2 under the memory bound.
    const order = batch.inputIds.map((_, i) => i);
    const chunks: number[][] = [];
    let current: number[] = [];
    let longest = 0;
    for (const i of order) {
      const len = batch.inputIds[i]!.length;
      const nextLongest = Math.max(longest, len);
      if (current.length > 0 && (current.length + 1) * H * nextLongest * nextLongest > s.maxAttentionElements) {
        chunks.push(current);
        current = [];
        longest = 0;
      }
      current.push(i);
      longest = Math.max(longest, len);
    }
    if (current.length > 0) chunks.push(current);
    return chunks;
  };

  /**
   * Gradients of sum_t g_t * logp_t (minus the entropy bonus) with g from the core's loss: one
   * forward and one backward per row chunk. The loss needs every sequence's new log-probs at once
   * (GSPO, seq-mean aggregations), so a batch over the memory bound takes one extra forward to read
   * them first. `null` when nothing is scored.
   */
  const computeGradients = async (batch: LogProbBatch, lossFn: LossFunction, updateOptions: UpdateOptions) => {
    const temperature = checkBatch(batch);
    const entropyCoef = updateOptions.entropyCoef ?? 0;
    if (!(Number.isFinite(entropyCoef) && entropyCoef >= 0)) throw new InvalidArgumentError('entropyCoef', `must be >= 0, got ${entropyCoef}`);
    if (updateOptions.signal?.aborted) throw new AbortedError('update', { cause: updateOptions.signal.reason });
    const scored = batch.positions.reduce((n, row) => n + row.length, 0);
    if (scored === 0) return null;
    const chunks = rowBatches(batch);
    let lossValue = 0;
    let metrics: Record<string, number> = {};
    let entropySum = 0;
    let gradNew: number[][] | null = null;
    if (chunks.length > 1) {
      const newLogProbs = await policy.logProbs(batch, updateOptions);
      const result = checkLoss(lossFn(newLogProbs), batch);
      gradNew = result.gradNewLogProbs;
      lossValue = result.value;
      metrics = result.metrics ?? {};
    }
    const accumulated: tf.Tensor[] = model.parameters.map((p) => tf.zerosLike(p.variable) as tf.Tensor);
    try {
      for (const chunk of chunks) {
        const rows = chunk.map((i) => batch.inputIds[i]!);
        const positions = chunk.map((i) => batch.positions[i]!);
        const { grads, entropy } = tf.tidy(() => {
          const dense = denseBatch(rows, positions);
          let chunkEntropy = 0;
          const { grads: named } = tf.variableGrads(() => {
            const { logp, token } = scoredLogProbs(model.forwardFull(dense.ids, dense.idValues), dense.pick, temperature);
            let weights = gradNew && chunk.map((i) => gradNew![i]!);
            if (!weights) {
              const values = token.dataSync() as Float32Array;
              const newLogProbs = positions.map((row, k) => row.map((p) => values[k * dense.T + p - 1]!));
              const result = checkLoss(lossFn(newLogProbs), batch);
              lossValue = result.value;
              metrics = result.metrics ?? {};
              weights = result.gradNewLogProbs;
            }
            const g = new Float32Array(rows.length * dense.T);
            positions.forEach((row, k) => row.forEach((p, t) => (g[k * dense.T + p - 1] = weights![k]![t]!)));
            // d/dtheta of sum_t g_t * logp_t is the policy gradient of the core's loss.
            let objective = tf.sum(tf.mul(token, tf.tensor1d(g)));
            const perToken = tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), 1));
            const entropySumTensor = tf.sum(tf.mul(perToken, dense.weight));
            chunkEntropy = entropySumTensor.dataSync()[0]!;
            if (entropyCoef > 0) objective = tf.sub(objective, tf.mul(entropySumTensor, entropyCoef / scored));
            return objective as tf.Scalar;
          }, model.parameters.map((p) => p.variable));
          return { grads: model.parameters.map((p) => named[p.variable.name]!), entropy: chunkEntropy };
        });
        entropySum += entropy;
        accumulated.forEach((acc, k) => {
          accumulated[k] = tf.add(acc, grads[k]!);
          acc.dispose();
          grads[k]!.dispose();
        });
      }
    } catch (error) {
      for (const t of accumulated) t.dispose();
      throw error;
    }
    return { grads: accumulated, value: lossValue, metrics, entropy: entropySum / scored };
  };

  const policy: TfjsPolicy = {
    specificationVersion: 'v1',
    provider: 'tfjs',
    modalities: 'text',
    tokenizer,
    trainable: true,
    backend: { name: selected.name, skipped: selected.skipped },
    modelConfig,
    get parameterCount() {
      return model.parameterCount;
    },
    get optimizerStep() {
      return optimizer.step;
    },

    async begin(promptTokenIds, callOptions?: CallOptions): Promise<RolloutSession> {
      await ensureReady();
      if (callOptions?.signal?.aborted) throw new AbortedError('begin', { cause: callOptions.signal.reason });
      const prompts: readonly (readonly number[])[] = promptTokenIds;
      if (!Array.isArray(promptTokenIds) || prompts.length === 0) throw new InvalidArgumentError('promptTokenIds', 'must be a non-empty array of token id arrays');
      prompts.forEach((ids, i) => {
        if (ids.length === 0) throw new InvalidArgumentError(`promptTokenIds[${i}]`, 'a prompt needs at least one token');
        if (ids.length >= C) throw new InvalidArgumentError(`promptTokenIds[${i}]`, `has ${ids.length} tokens; the model's context is ${C} and the policy must have room to answer`);
        ids.forEach((id, t) => {
          if (!(Number.isInteger(id) && id >= 0 && id < modelConfig.vocabSize)) throw new InvalidArgumentError(`promptTokenIds[${i}][${t}]`, `token id ${id} is outside the vocabulary`);
        });
      });
      const sessionIndex = sessionCounter++;
      const rows: RowState[] = promptTokenIds.map((ids, r) => ({
        sequence: [...ids],
        cached: 0,
        keys: Array.from({ length: L }, () => new Float32Array(0)),
        values: Array.from({ length: L }, () => new Float32Array(0)),
        capacity: 0,
        random: createRandom(samplingSeed, 2, sessionIndex, r),
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
          await ensureReady();
          if (turnOptions.signal?.aborted) throw new AbortedError('generateTurn', { cause: turnOptions.signal.reason });
          if (new Set(rolloutIds).size !== rolloutIds.length) throw new InvalidArgumentError('rolloutIds', 'lists a rollout twice');
          if (!(Number.isFinite(turnOptions.temperature) && turnOptions.temperature >= 0)) throw new InvalidArgumentError('temperature', `must be >= 0, got ${turnOptions.temperature}`);
          if (!(turnOptions.topP > 0 && turnOptions.topP <= 1)) throw new InvalidArgumentError('topP', `must be in (0, 1], got ${turnOptions.topP}`);
          const jobRows = rolloutIds.map((rolloutId, k) => {
            const row = rowOf(rolloutId, 'rolloutIds');
            const maxTokens = Math.min(maxTokensAt(turnOptions, k), C - row.sequence.length);
            return { row, rolloutId, maxTokens, steps: [] as TokenStep[], finish: (maxTokens <= 0 ? 'length' : null) as TurnOutput['finishReason'] | null, tail: '' };
          });
          const busy = jobRows.find((r) => r.row.busy);
          if (busy) throw new InvalidArgumentError('rolloutIds', `rollout ${busy.rolloutId} is already generating a turn`);
          for (const r of jobRows) r.row.busy = true;
          const settle = () => {
            for (const r of jobRows) r.row.busy = false;
          };
          const { stopIds, stopStrings } = stopSets(turnOptions.stopAfter);
          const done = new Promise<TurnOutput[]>((resolve, reject) => jobs.push({ sessionIndex, settle, rows: jobRows, options: turnOptions, stopIds, stopStrings, resolve, reject }));
          void pump();
          return done;
        },
        async append(rolloutId, tokenIds) {
          const row = rowOf(rolloutId, 'rolloutId');
          if (row.busy) throw new InvalidArgumentError('rolloutId', `rollout ${rolloutId} is generating a turn; append after it returns`);
          if (row.sequence.length + tokenIds.length > C) {
            throw new InvalidArgumentError('tokenIds', `appending ${tokenIds.length} tokens to rollout ${rolloutId} (${row.sequence.length} tokens) exceeds the model's context of ${C}`);
          }
          tokenIds.forEach((id, t) => {
            if (!(Number.isInteger(id) && id >= 0 && id < modelConfig.vocabSize)) throw new InvalidArgumentError(`tokenIds[${t}]`, `token id ${id} is outside the vocabulary`);
          });
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

    async logProbs(batch, callOptions) {
      await ensureReady();
      const temperature = checkBatch(batch);
      const out: number[][] = batch.positions.map(() => []);
      for (const chunk of rowBatches(batch)) {
        if (callOptions?.signal?.aborted) throw new AbortedError('logProbs', { cause: callOptions.signal.reason });
        const rows = chunk.map((i) => batch.inputIds[i]!);
        const positions = chunk.map((i) => batch.positions[i]!);
        const T = Math.max(...rows.map((r) => r.length));
        const token = tf.tidy(() => {
          const dense = denseBatch(rows, positions);
          return scoredLogProbs(model.forwardFull(dense.ids, dense.idValues), dense.pick, temperature).token;
        });
        const values = { data: token.dataSync() as Float32Array, T };
        token.dispose();
        chunk.forEach((i, k) => {
          out[i] = batch.positions[i]!.map((p) => values.data[k * values.T + p - 1]!);
        });
      }
      return out;
    },

    async update(batch, lossFn: LossFunction, updateOptions: UpdateOptions = {}): Promise<UpdateResult> {
      await ensureReady();
      const computed = await computeGradients(batch, lossFn, updateOptions);
      if (computed === null) return { value: 0, gradNorm: 0, applied: false, skippedReason: 'no positions to score' };
      try {
        const step = optimizer.apply(computed.grads);
        return {
          value: computed.value,
          gradNorm: step.gradNorm,
          applied: step.applied,
          ...(step.skippedReason && { skippedReason: step.skippedReason }),
          metrics: { ...computed.metrics, entropy: computed.entropy, learningRate: step.learningRate },
        };
      } finally {
        for (const t of computed.grads) t.dispose();
      }
    },

    async gradients(batch, lossFn, updateOptions = {}) {
      await ensureReady();
      const computed = await computeGradients(batch, lossFn, updateOptions);
      const out: Record<string, Float32Array> = {};
      model.parameters.forEach((p, k) => {
        out[p.name] = computed ? (computed.grads[k]!.dataSync() as Float32Array).slice() : new Float32Array(p.variable.size);
        computed?.grads[k]!.dispose();
      });
      return { value: computed?.value ?? 0, gradients: out };
    },

    async save(): Promise<PolicyCheckpoint> {
      await ensureReady();
      const pack = (tensors: readonly tf.Tensor[]) => {
        const total = tensors.reduce((n, t) => n + t.size, 0);
        const data = new Float32Array(total);
        let offset = 0;
        for (const t of tensors) {
          data.set(t.dataSync() as Float32Array, offset);
          offset += t.size;
        }
        return new Uint8Array(data.buffer);
      };
      return {
        format: CHECKPOINT_FORMAT,
        metadata: {
          model: modelConfig,
          tokenizer: {
            vocabSize: tokenizer.vocabSize,
            eosTokenId: tokenizer.eosTokenId,
            specials: [...PROTOCOL_TAG_STRINGS, '<eos>'].filter((t) => tokenizer.specialTokenId(t) !== undefined),
            // A corpus vocabulary travels with the weights (tokenizerFromCheckpoint rebuilds it).
            ...(tokenizer.vocabulary && { vocabulary: [...tokenizer.vocabulary] }),
            fingerprint: tokenizerFingerprint,
          },
          parameters: model.parameters.map((p) => ({ name: p.name, shape: p.variable.shape })),
          optimizer: { step: optimizer.step, settings: optimizer.settings },
          sampling: { seed: samplingSeed, sessionCounter },
          byteOrder: 'little-endian float32',
        },
        blobs: {
          'weights.f32': pack(model.parameters.map((p) => p.variable)),
          'adam-m.f32': pack(optimizer.firstMoments),
          'adam-v.f32': pack(optimizer.secondMoments),
        },
      };
    },

    async load(checkpoint) {
      await ensureReady();
      // Everything is checked and decoded before anything changes: a refused checkpoint leaves the policy as it was.
      if (!checkpoint || checkpoint.format !== CHECKPOINT_FORMAT) {
        throw new InvalidArgumentError('checkpoint.format', `expected '${CHECKPOINT_FORMAT}', got '${String(checkpoint?.format)}'`);
      }
      const meta = checkpoint.metadata as { model?: Record<string, unknown>; tokenizer?: { vocabSize?: unknown; fingerprint?: unknown }; optimizer?: { step?: unknown; settings?: unknown }; sampling?: { seed?: unknown; sessionCounter?: unknown } };
      for (const key of Object.keys(modelConfig) as Array<keyof TransformerConfig>) {
        if (meta.model?.[key] !== modelConfig[key]) {
          throw new InvalidArgumentError(`checkpoint.metadata.model.${key}`, `the checkpoint has ${String(meta.model?.[key])}, this policy ${modelConfig[key]}; create the policy with the checkpoint's model settings`);
        }
      }
      if (meta.tokenizer?.vocabSize !== tokenizer.vocabSize || meta.tokenizer?.fingerprint !== tokenizerFingerprint) {
        throw new InvalidArgumentError('checkpoint.metadata.tokenizer', 'the checkpoint was trained with a different tokenizer (vocabulary, token texts or end-of-sequence id differ)');
      }
      const step = meta.optimizer?.step;
      const counter = meta.sampling?.sessionCounter;
      const seed = meta.sampling?.seed;
      if (!(Number.isInteger(step) && (step as number) >= 0)) throw new InvalidArgumentError('checkpoint.metadata.optimizer.step', `must be a non-negative integer, got ${String(step)}`);
      if (!(Number.isInteger(counter) && (counter as number) >= 0)) throw new InvalidArgumentError('checkpoint.metadata.sampling.sessionCounter', `must be a non-negative integer, got ${String(counter)}`);
      if (!Number.isInteger(seed)) throw new InvalidArgumentError('checkpoint.metadata.sampling.seed', `must be an integer, got ${String(seed)}`);
      const savedSettings = tfjsPolicySettingsSchema.shape.optimizer.safeParse(meta.optimizer?.settings);
      if (!savedSettings.success) throw settingsError('checkpoint.metadata.optimizer.settings', savedSettings.error.issues);
      const total = model.parameters.reduce((n, p) => n + p.variable.size, 0);
      const decode = (name: string) => {
        const bytes = checkpoint.blobs[name];
        if (!bytes || bytes.byteLength !== total * 4) throw new InvalidArgumentError(`checkpoint.blobs['${name}']`, `expected ${total * 4} bytes, got ${bytes?.byteLength ?? 'none'}`);
        return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
      };
      const weights = decode('weights.f32');
      const firstMoments = decode('adam-m.f32');
      const secondMoments = decode('adam-v.f32');
      // The optimizer continues as it was saved, settings included (a run may reset it after SFT).
      if (JSON.stringify(savedSettings.data) !== JSON.stringify(optimizer.settings)) {
        optimizer.dispose();
        optimizer = new AdamW(model.parameters, savedSettings.data);
      }
      const assign = (data: Float32Array, targets: readonly tf.Variable[]) => {
        let offset = 0;
        tf.tidy(() => {
          for (const t of targets) {
            t.assign(tf.tensor(data.subarray(offset, offset + t.size), t.shape));
            offset += t.size;
          }
        });
      };
      assign(weights, model.parameters.map((p) => p.variable));
      assign(firstMoments, optimizer.firstMoments);
      assign(secondMoments, optimizer.secondMoments);
      optimizer.step = step as number;
      sessionCounter = counter as number;
      samplingSeed = seed as number;
    },

    resetOptimizer(overrides = {}) {
      const next = { ...optimizer.settings, ...overrides };
      const checked = tfjsPolicySettingsSchema.shape.optimizer.safeParse(next);
      if (!checked.success) throw settingsError('resetOptimizer', checked.error.issues);
      optimizer.dispose();
      optimizer = new AdamW(model.parameters, checked.data);
    },

    dispose() {
      if (disposed) return;
      disposed = true;
      model.dispose();
      optimizer.dispose();
    },
  };
  return policy;
}

function checkLoss(result: ReturnType<LossFunction>, batch: LogProbBatch): ReturnType<LossFunction> {
  if (!result || !Array.isArray(result.gradNewLogProbs) || result.gradNewLogProbs.length !== batch.positions.length) {
    throw new PortOutputError({ port: 'policy', provider: 'tfjs', field: 'lossFn().gradNewLogProbs', message: 'must have one row per sequence of the batch' });
  }
  result.gradNewLogProbs.forEach((row, i) => {
    if (!Array.isArray(row) || row.length !== batch.positions[i]!.length) {
      throw new PortOutputError({ port: 'policy', provider: 'tfjs', field: `lossFn().gradNewLogProbs[${i}]`, message: `must have ${batch.positions[i]!.length} entries (one per scored position)` });
    }
  });
  return result;
}


/**
 * The tokenizer a checkpoint was trained with: its saved corpus vocabulary, or the byte-level
 * protocol tokenizer. Create the policy with it before `load`.
 */
export function tokenizerFromCheckpoint(checkpoint: PolicyCheckpoint): Tokenizer {
  const vocabulary = (checkpoint.metadata as { tokenizer?: { vocabulary?: unknown } }).tokenizer?.vocabulary;
  if (vocabulary === undefined) return createProtocolTokenizer();
  if (!Array.isArray(vocabulary) || !vocabulary.every((w) => typeof w === 'string')) throw new InvalidArgumentError('checkpoint.metadata.tokenizer.vocabulary', 'must be an array of words');
  return createVocabularyTokenizer(vocabulary as string[]);
}
