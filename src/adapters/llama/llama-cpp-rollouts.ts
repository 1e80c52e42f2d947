import { resolve } from 'node:path';
import { AbortedError, InvalidArgumentError, ProviderCallError, SearcherError } from '../../core/errors';
import { maxTokensAt } from '../../core/episode/token-budget';
import { createRandom, RANDOM_STREAMS, type Random } from '../../core/random';
import type { CallOptions } from '../../ports/common';
import type { GenerateTurnOptions, RolloutSession, TurnOutput } from '../../ports/policy-backend';
import type { TokenStep, Tokenizer } from '../../ports/types';
import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import {
  checkAppend,
  checkBeginRequest,
  checkTurnRequest,
  type RolloutLimits,
  sessionRowLookup,
} from '../../rollout-engine/batch-checks';
import { sampleToken } from '../../rollout-engine/sampling';
import { createTurnStop } from '../../rollout-engine/turn-stop';
import {
  LLAMA_CPP_PACKAGE,
  type LlamaCppContext,
  type LlamaCppGpu,
  type LlamaCppInputItem,
  type LlamaCppLibrary,
  type LlamaCppModel,
  type LlamaCppSampleOptions,
  type LlamaCppSequence,
  serializeSampling,
} from './llama-cpp-binding';

export { LLAMA_CPP_PACKAGE, type LlamaCppGpu };

/** What `createLlamaCppRollouts` takes. */
export interface LlamaCppRolloutSettings {
  /** A .gguf file (llama.cpp computes on its stored types: Q4_1 stays Q4_1). */
  model: string;
  /**
   * The training engine's tokenizer: prompts and observations come as its ids, and the stop rules
   * decode with it, so that a rollout's ids are the ones the trainer scores.
   */
  tokenizer: Tokenizer;
  /** Tokens one rollout may hold (prompt, turns and observations): each rollout's KV cache size. */
  contextLength: number;
  /** Rollouts one llama.cpp context holds; their turns decode in shared batches. More rollouts open another context. */
  sequencesPerContext: number;
  /** CPU threads of llama.cpp's forward (default: node-llama-cpp's, the machine's cores). */
  threads?: number;
  gpu?: LlamaCppGpu;
  /** Keys each rollout's sampling stream (with the session's and the rollout's index). */
  seed: number;
  /** End-of-sequence ids besides `tokenizer.eosTokenId`. */
  extraEosTokenIds?: readonly number[];
  /**
   * The training engine's log-probs of each turn's tokens (its `logProbs`), recorded in the turn's
   * TokenSteps instead of llama.cpp's: the trainer's ratio compares its new log-probs with these,
   * and llama.cpp's quantised forward differs from the trainer's (as verl recomputes vLLM's
   * old_log_prob with the actor). Called once a turn with every listed rollout that sampled a token.
   */
  rescore?: (batch: {
    inputIds: number[][];
    positions: number[][];
    temperature: number;
  }) => Promise<number[][]>;
  /** A GGUF LoRA adapter applied at run time (llama.cpp's `--lora`), with its scale (default 1). */
  loraAdapter?: { path: string; scale?: number };
}

/** Rollout sessions on llama.cpp: the RolloutSession of the policy port. */
export interface LlamaCppRollouts {
  readonly provider: 'llama-cpp';
  /** What llama.cpp computes on ('cpu', 'cuda', 'vulkan', 'metal'). */
  readonly device: string;
  begin(promptTokenIds: readonly (readonly number[])[], callOptions?: CallOptions): Promise<RolloutSession>;
  /**
   * Rollouts begun after this call use this LoRA adapter (a GGUF adapter file; null: none).
   * Sessions already open keep the weights they began with: their KV caches were computed with them.
   */
  setLoraAdapter(adapter: { path: string; scale?: number } | null): Promise<void>;
  /** Frees every context and the model. */
  dispose(): Promise<void>;
}

interface Row {
  sequence: number[];
  /** Tokens llama.cpp's sequence holds in its KV cache; the rest are fed on the next turn. */
  cached: number;
  llamaSequence: LlamaCppSequence;
  random: Random;
  busy: boolean;
}

interface ContextEntry {
  context: LlamaCppContext;
  /** The adapter version its weights were built with. */
  version: number;
  live: number;
}

/** 2^32: llama.cpp's sampler seed is an unsigned 32-bit integer. */
const SEED_RANGE = 4_294_967_296;

/**
 * Rollouts sampled by llama.cpp (node-llama-cpp's low-level API) on a GGUF model, for a policy whose
 * training engine recomputes the log-probs it trains on, as verl trains behind vLLM. Each rollout
 * is a llama.cpp sequence that keeps its KV cache across turns (observations are fed with the next
 * turn's first forward); the turns of every open rollout of a context decode in shared batches.
 *
 * Sampling: at top-p 1 (and greedy) llama.cpp samples with top-k and top-p off and a seed drawn
 * from the rollout's seeded stream (one draw a token, none when greedy), and a step's log-prob is
 * log softmax(logits / temperature) of the token (llama.cpp's `confidence`). Below top-p 1 the
 * full distribution comes back and the project's sampler draws from it (temperature before the
 * nucleus, as `sampleToken` does; llama.cpp's own chain cuts the nucleus before the temperature).
 * llama.cpp computes on the GGUF's quantised weights (Q4_1 blocks dequantised inside its kernels,
 * activations quantised to Q8 for the dot products) while the training engine runs float32 weights
 * dequantised at load: the log-probs agree to about 1e-2, not 1e-4 (docs/pretrained-models.md).
 */
export async function createLlamaCppRollouts(settings: LlamaCppRolloutSettings): Promise<LlamaCppRollouts> {
  const { tokenizer, contextLength, sequencesPerContext } = settings;
  if (!settings.model.endsWith('.gguf'))
    throw new InvalidArgumentError({
      argument: 'model',
      message: `llama.cpp rollouts read a .gguf file; '${settings.model}' is not one`,
    });
  for (const [name, value] of [
    ['contextLength', contextLength],
    ['sequencesPerContext', sequencesPerContext],
    ...(settings.threads !== undefined ? [['threads', settings.threads] as const] : []),
  ] as const)
    if (!(Number.isInteger(value) && value > 0))
      throw new InvalidArgumentError({ argument: name, message: `must be a positive integer, got ${value}` });
  const lib = (await loadWithOptionalPackages(
    'searcher-rl/llama (llama-cpp rollouts)',
    [LLAMA_CPP_PACKAGE],
    () => import(LLAMA_CPP_PACKAGE.name),
  )) as LlamaCppLibrary;
  let llama: Awaited<ReturnType<LlamaCppLibrary['getLlama']>>;
  let model: LlamaCppModel;
  try {
    llama = await lib.getLlama({
      gpu: settings.gpu ?? false,
      build: 'never',
      logLevel: lib.LlamaLogLevel.error,
      ...(settings.threads !== undefined && { maxThreads: settings.threads }),
    });
    model = await llama.loadModel({ modelPath: settings.model });
  } catch (error) {
    throw new ProviderCallError({
      port: 'policy',
      provider: 'llama-cpp',
      message: `node-llama-cpp could not load '${settings.model}' (gpu: ${String(settings.gpu ?? false)}): ${error instanceof Error ? error.message : String(error)}`,
      isRetryable: false,
      cause: error,
    });
  }
  const vocabSize = tokenizer.vocabSize;
  const limits: RolloutLimits = { contextLength, vocabSize, contextName: "the rollouts'" };
  const eosIds = settings.extraEosTokenIds ?? [];
  const contexts: ContextEntry[] = [];
  const state = { version: 0, sessionCounter: 0, disposed: false, adapter: settings.loraAdapter ?? null };

  const newContext = async (): Promise<ContextEntry> => {
    const context = await model.createContext({
      sequences: sequencesPerContext,
      contextSize: contextLength,
      ...(settings.threads !== undefined && { threads: settings.threads }),
      ...(state.adapter && {
        lora: { adapters: [{ filePath: state.adapter.path, scale: state.adapter.scale ?? 1 }] },
      }),
    });
    serializeSampling(context);
    const entry = { context, version: state.version, live: 0 };
    contexts.push(entry);
    return entry;
  };
  /** Frees contexts built with an older adapter once their last rollout is released. */
  /** Adapter files of older versions, unloaded once no context of theirs is left. */
  const retired = new Map<number, string>();
  const releaseStale = async () => {
    for (let i = contexts.length - 1; i >= 0; i--) {
      const entry = contexts[i]!;
      if (entry.version !== state.version && entry.live === 0) {
        contexts.splice(i, 1);
        await entry.context.dispose();
      }
    }
    // node-llama-cpp 3.21 keeps every adapter it loaded until the model is disposed (its model's
    // `_loraAdapters`, by resolved path): one per update would grow without end, so a retired one
    // is unloaded here. Pinned version: the field is internal.
    for (const [version, path] of retired) {
      if (contexts.some((entry) => entry.version === version)) continue;
      retired.delete(version);
      const loaded = (model as { _loraAdapters?: Map<string, { dispose(): Promise<void> }> })._loraAdapters;
      const key = loaded && [...loaded.keys()].find((k) => k === resolve(path));
      if (loaded && key) {
        await loaded.get(key)!.dispose();
        loaded.delete(key);
      }
    }
  };
  const acquire = async (count: number) => {
    const taken: Array<{ entry: ContextEntry; sequence: LlamaCppSequence }> = [];
    for (const entry of contexts) {
      if (entry.version !== state.version) continue;
      while (taken.length < count && entry.context.sequencesLeft > 0)
        taken.push({ entry, sequence: entry.context.getSequence() });
    }
    while (taken.length < count) {
      const entry = await newContext();
      while (taken.length < count && entry.context.sequencesLeft > 0)
        taken.push({ entry, sequence: entry.context.getSequence() });
    }
    for (const t of taken) t.entry.live++;
    return taken;
  };

  const checkReady = () => {
    if (state.disposed)
      throw new InvalidArgumentError({
        argument: 'rollouts',
        message: 'these llama.cpp rollouts were disposed',
      });
  };
  /** One step's token and its log-prob at `temperature` after feeding the row's uncached tokens. */
  const step = async (
    row: Row,
    temperature: number,
    topP: number,
  ): Promise<{ tokenId: number; logProb: number }> => {
    const pending = row.sequence.slice(row.cached);
    const nucleus = temperature > 0 && topP < 1;
    // top-k and top-p left out (null) so that llama.cpp's chain is temperature and draw only.
    const options: LlamaCppSampleOptions = {
      temperature,
      topK: null,
      topP: null,
      minP: 0,
      ...(temperature > 0 && !nucleus && { seed: Math.floor(row.random.nextFloat() * SEED_RANGE) }),
    };
    const last: LlamaCppInputItem = [
      pending.at(-1)!,
      {
        generateNext: nucleus ? { probabilities: true, options } : { token: true, confidence: true, options },
      },
    ];
    const result = await row.llamaSequence.controlledEvaluate([...pending.slice(0, -1), last]);
    row.cached = row.sequence.length;
    const next = result.at(-1)?.next;
    if (nucleus) {
      const probabilities = next?.probabilities;
      if (!probabilities) throw new Error('llama.cpp returned no probabilities');
      const logProbs = new Float32Array(vocabSize).fill(Number.NEGATIVE_INFINITY);
      for (const [id, p] of probabilities) if (id < vocabSize) logProbs[id] = Math.log(p);
      const tokenId = sampleToken(logProbs, { temperature, topP }, row.random);
      return { tokenId, logProb: logProbs[tokenId]! };
    }
    if (next?.token === undefined || next.token === null || next.confidence === undefined)
      throw new Error('llama.cpp sampled no token');
    return { tokenId: next.token, logProb: Math.log(next.confidence) };
  };

  const runTurn = async (
    row: Row,
    maxTokens: number,
    options: GenerateTurnOptions,
  ): Promise<{ steps: TokenStep[]; finishReason: TurnOutput['finishReason'] }> => {
    const stop = createTurnStop(tokenizer, options.stopAfter, {
      maxTokens,
      contextLength,
      extraEosTokenIds: eosIds,
    });
    const steps: TokenStep[] = [];
    if (maxTokens <= 0) return { steps, finishReason: 'length' };
    for (;;) {
      if (options.signal?.aborted)
        throw new AbortedError({ what: 'generateTurn', cause: options.signal.reason });
      const { tokenId, logProb } = await step(row, options.temperature, options.topP);
      steps.push({
        tokenId,
        tokenText: tokenizer.tokenText(tokenId),
        logProb,
        position: row.sequence.length,
      });
      row.sequence.push(tokenId);
      const finish = stop.afterToken(tokenId, steps.length, row.sequence.length);
      if (finish) return { steps, finishReason: finish };
    }
  };

  return {
    provider: 'llama-cpp',
    device: llama.gpu === false ? 'cpu' : llama.gpu,
    async begin(promptTokenIds, callOptions) {
      checkReady();
      checkBeginRequest(promptTokenIds, callOptions, limits);
      const sessionIndex = state.sessionCounter++;
      const taken = await acquire(promptTokenIds.length);
      const rows: Row[] = taken.map(({ sequence }, r) => ({
        sequence: [...promptTokenIds[r]!],
        cached: 0,
        llamaSequence: sequence,
        random: createRandom(settings.seed, RANDOM_STREAMS.sampling, sessionIndex, r),
        busy: false,
      }));
      let ended = false;
      const rowOf = sessionRowLookup(rows, () => ended);
      return {
        size: rows.length,
        async generateTurn(rolloutIds, options) {
          checkReady();
          checkTurnRequest(rolloutIds, options);
          const listed = rolloutIds.map((id) => rowOf(id, 'rolloutIds'));
          const busy = rolloutIds.find((_, k) => listed[k]!.busy);
          if (busy !== undefined)
            throw new InvalidArgumentError({
              argument: 'rolloutIds',
              message: `rollout ${busy} is already generating a turn`,
            });
          for (const row of listed) row.busy = true;
          try {
            // Every row steps on its own promise: node-llama-cpp gathers the rows' evaluations of
            // one event-loop cycle into one batch (one llama_decode for all of a context's rows).
            const outputs = await Promise.all(
              listed.map(async (row, k) => {
                const maxTokens = Math.min(maxTokensAt(options, k), contextLength - row.sequence.length);
                const turn = await runTurn(row, maxTokens, options);
                return { rolloutId: rolloutIds[k]!, ...turn };
              }),
            );
            const sampled = outputs.filter((o) => o.steps.length > 0);
            if (settings.rescore && sampled.length > 0) {
              const scored = await settings.rescore({
                inputIds: sampled.map((o) => [...rows[o.rolloutId]!.sequence]),
                positions: sampled.map((o) => o.steps.map((s) => s.position)),
                temperature: options.temperature === 0 ? 1 : options.temperature,
              });
              sampled.forEach((o, i) => {
                o.steps = o.steps.map((s, k) => ({ ...s, logProb: scored[i]![k]! }));
              });
            }
            return outputs;
          } catch (error) {
            if (SearcherError.isInstance(error)) throw error;
            throw new ProviderCallError({
              port: 'policy',
              provider: 'llama-cpp',
              message: `llama.cpp decode failed: ${error instanceof Error ? error.message : String(error)}`,
              isRetryable: false,
              cause: error,
            });
          } finally {
            for (const row of listed) row.busy = false;
          }
        },
        async append(rolloutId, tokenIds) {
          const row = rowOf(rolloutId, 'rolloutId');
          checkAppend(row, rolloutId, tokenIds, limits);
          // Absorbed lazily: the next turn feeds these tokens in its first forward.
          row.sequence.push(...tokenIds);
        },
        async end() {
          if (ended) return;
          ended = true;
          for (const { entry, sequence } of taken) {
            entry.live--;
            if (!sequence.disposed) sequence.dispose();
          }
          await releaseStale();
        },
      };
    },
    async setLoraAdapter(adapter) {
      checkReady();
      if (state.adapter) retired.set(state.version, state.adapter.path);
      state.adapter = adapter;
      state.version++;
      await releaseStale();
    },
    async dispose() {
      if (state.disposed) return;
      state.disposed = true;
      for (const entry of contexts.splice(0)) await entry.context.dispose();
      await model.dispose();
    },
  };
}
