import { InvalidArgumentError, NotTrainableError, throwIfAborted } from '../../core/errors';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import type { CallOptions } from '../../ports/common';
import type {
  LogProbBatch,
  LossFunction,
  PolicyBackend,
  PolicyCheckpoint,
  PolicyDescription,
  UpdateOptions,
  UpdateResult,
} from '../../ports/policy-backend';
import { decodeSafetensors, encodeSafetensors, float32Of } from '../../provider-utils/safetensors';
import { checkLogProbBatch } from '../../rollout-engine/batch-checks';
import { emptyKvCache } from '../../rollout-engine/kv-cache';
import { createRolloutScheduler } from '../../rollout-engine/rollout-scheduler';
import * as ort from 'onnxruntime-node';
import { createHfTokenizer } from '../../provider-utils/hf-tokenizer';
import { FloatAdamW } from './adamw';
import { chatFormatOf, dropoutMasks } from './chat-format';
import { hfModelFiles, peftAdapterFiles, readOptimizerMoments } from './checkpoint';
import type { LlamaConfig } from '../engines/llama/config';
import { createLlamaEngine, type LlamaRow, type WeightMap } from '../engines/llama/engine';
import { LLAMA_NAMES, type LoraShape, loraWeightShapes } from '../engines/llama/llama-graph';
import { createLlamaTrainingEngine, llamaRolloutEngine } from '../engines/llama/policy-engines';
import { type LoadedLlama, loadLlamaModel, loadPeftAdapter } from './loader';
import { withLlamaCppRollouts } from './llama-cpp-policy';
import { type LlamaPolicySettings, parseLlamaPolicySettings } from './settings';
import { checkCheckpointFormat } from '../../provider-utils/checkpoint-format';

export const LLAMA_CHECKPOINT_FORMAT = 'searcher-rl.llama.v1';
export { chatFormatOf };

export interface LlamaPolicy extends PolicyBackend {
  readonly provider: 'llama';
  readonly contextLength: number;
  readonly modelConfig: LlamaConfig;
  readonly finetune: 'lora' | 'full' | 'none';
  /** Trainable parameters (the adapter's under LoRA). */
  readonly trainableParameterCount: number;
  /**
   * The base's scalars and the adapter's as parameterCount, the trainable ones (absent with
   * finetune 'none'), ONNX Runtime's CPU provider as the backend; no added tags.
   */
  describe(): PolicyDescription;
  /**
   * The frozen base model as GRPO's KL reference (`ports.referencePolicy` with
   * `rl.loss.klReference: 'initial'`): under LoRA the same sessions score with the adapter off, so
   * the reference costs no second copy of the weights. With full fine-tuning it is refused (the
   * reference would need a second model: load one with `finetune: 'none'`).
   */
  baseReference(): Pick<PolicyBackend, 'logProbs'>;
  /** A new AdamW (moments cleared) with this learning rate and warm-up: a run's phase starts one. */
  resetOptimizer(settings: { learningRate: number; warmupSteps: number }): void;
  /** Releases the ONNX Runtime sessions. */
  dispose(): Promise<void>;
}

/**
 * A trainable Searcher policy on a pretrained Llama-family model (SmolLM2, Llama, Mistral, Qwen2,
 * Qwen3) run in process by ONNX Runtime: rollouts keep each rollout's key/value cache across turns
 * and decode concurrent sessions in shared forwards; `update` trains LoRA adapters on the frozen
 * base (or every weight with `finetune: 'full'`) with AdamW. Checkpoints are a transformers folder
 * (full) or a peft adapter folder (LoRA).
 */
export async function createLlamaPolicy(settings: LlamaPolicySettings): Promise<LlamaPolicy> {
  const parsed = parseLlamaPolicySettings(settings);
  const loaded: LoadedLlama = await loadLlamaModel(parsed.model);
  const { config } = loaded;
  if (!loaded.tokenizer)
    throw new InvalidArgumentError({
      argument: 'model',
      message: `'${parsed.model}' has no tokenizer.json; a policy needs the model's tokenizer`,
    });
  const contextLength = Math.min(config.maxPositions, parsed.contextLength ?? Number.POSITIVE_INFINITY);
  const eosTokenIds = config.eosTokenIds.length > 0 ? config.eosTokenIds : [0];
  const tokenizer = createHfTokenizer(loaded.tokenizer.json, loaded.tokenizer.config, {
    vocabSize: config.vocabSize,
    eosTokenId: eosTokenIds[0]!,
  });
  const finetune = parsed.finetune;
  let lora: { shape: LoraShape; weights: WeightMap; alpha: number; dropoutRate: number } | undefined;
  if (finetune === 'lora' || parsed.lora.adapter) {
    if (parsed.lora.adapter) {
      const adapter = await loadPeftAdapter(parsed.lora.adapter, config);
      lora = {
        shape: {
          rank: adapter.rank,
          scaling: adapter.alpha / adapter.rank,
          targets: adapter.targets,
          dropout: adapter.dropout > 0,
        },
        weights: adapter.weights,
        alpha: adapter.alpha,
        dropoutRate: adapter.dropout,
      };
    } else {
      const { rank, alpha, dropout, targetModules } = parsed.lora;
      const shape: LoraShape = { rank, scaling: alpha / rank, targets: targetModules, dropout: dropout > 0 };
      // peft's default init: A Kaiming-uniform (a = sqrt(5): bound 1 / sqrt(in)), B zeros, so the adapter starts as the base.
      const random = createRandom(parsed.seed, RANDOM_STREAMS.modelWeights, 7);
      const weights: WeightMap = new Map();
      for (const { name, shape: dims } of loraWeightShapes(config, shape)) {
        const values = new Float32Array(dims[0]! * dims[1]!);
        if (name.endsWith('lora_A.weight')) {
          const bound = 1 / Math.sqrt(dims[1]!);
          for (let i = 0; i < values.length; i++) values[i] = (random.nextFloat() * 2 - 1) * bound;
        }
        weights.set(name, values);
      }
      lora = { shape, weights, alpha, dropoutRate: dropout };
    }
  }
  const engine = await createLlamaEngine(ort, {
    config,
    base: loaded.weights,
    ...(lora && { lora: { shape: lora.shape, weights: lora.weights } }),
    trainBase: finetune === 'full',
    session: { ...(parsed.intraOpThreads !== undefined && { intraOpThreads: parsed.intraOpThreads }) },
    maxBatchRows: parsed.maxBatchRows,
    maxChunkTokens: parsed.maxChunkTokens,
    trainingMemoryArena: parsed.trainingMemoryArena,
  });
  // The policy's two engines: rollouts decode on the Llama engine, updates train on it in two runs a chunk.
  const rolloutEngine = llamaRolloutEngine(engine);
  const trainingEngine = createLlamaTrainingEngine(engine, {
    keptActivationBytes: parsed.keptActivationBytes,
    dropout: (tokens) => masksFor(tokens, true),
    deterministic: !(lora && lora.dropoutRate > 0),
  });
  const trainable: WeightMap =
    finetune === 'full' ? loaded.weights : finetune === 'lora' && lora ? lora.weights : new Map();
  const scalarsOf = (weights: WeightMap) => [...weights.values()].reduce((n, w) => n + w.length, 0);
  const trainableParameterCount = scalarsOf(trainable);
  const description: PolicyDescription = {
    parameterCount: scalarsOf(loaded.weights) + (lora ? scalarsOf(lora.weights) : 0),
    ...(finetune !== 'none' && { trainableParameterCount }),
    backend: 'onnxruntime-cpu',
    addedTags: [],
  };
  let optimizer = new FloatAdamW(parsed.optimizer);
  const chatFormat =
    parsed.chatTemplate && loaded.chatTemplate
      ? chatFormatOf(loaded.chatTemplate, {
          ...(typeof loaded.tokenizer.config.bos_token === 'string' && {
            bos_token: loaded.tokenizer.config.bos_token,
          }),
          ...(typeof loaded.tokenizer.config.eos_token === 'string' && {
            eos_token: loaded.tokenizer.config.eos_token,
          }),
        })
      : undefined;
  const state = { sessionCounter: 0, disposed: false };
  const dropoutRandom = createRandom(parsed.seed, RANDOM_STREAMS.dropout);
  const loraInDims = new Map<string, number>();
  if (lora)
    for (const { name, shape } of loraWeightShapes(config, lora.shape))
      if (name.endsWith('lora_A.weight')) {
        const [, layer, , module] = name.split('.').slice(1, 5);
        loraInDims.set(LLAMA_NAMES.dropout(`${layer}.${module}`), shape[1]!);
      }
  const ensureReady = async () => {
    if (state.disposed)
      throw new InvalidArgumentError({ argument: 'policy', message: 'this LlamaPolicy was disposed' });
  };
  const scheduler = createRolloutScheduler<LlamaRow>({
    provider: 'llama',
    tokenizer,
    vocabSize: config.vocabSize,
    contextLength,
    coalesceSessions: parsed.coalesceSessions,
    extraEosTokenIds: eosTokenIds.slice(1),
    ensureReady,
    forward: async (rows, temperature) => rolloutEngine.forward(rows, temperature),
    createRow: (ids, sessionIndex, r) => ({
      sequence: [...ids],
      cached: 0,
      ...emptyKvCache(engine.kvShape),
      random: createRandom(parsed.seed, RANDOM_STREAMS.sampling, sessionIndex, r),
      busy: false,
      released: false,
    }),
    releaseRow: (row) => {
      row.released = true;
      Object.assign(row, emptyKvCache(engine.kvShape));
    },
    nextSessionIndex: () => state.sessionCounter++,
  });
  const model = { contextLength, vocabSize: config.vocabSize };
  const training = finetune !== 'none';
  const masksFor = (tokens: number, active: boolean) =>
    active && lora && lora.dropoutRate > 0
      ? dropoutMasks([...loraInDims.keys()], loraInDims, tokens, lora.dropoutRate, dropoutRandom)
      : lora?.shape.dropout
        ? // Scoring outside training: dropout off (every mask 1).
          Object.fromEntries([...loraInDims].map(([name, d]) => [name, new Float32Array(tokens * d).fill(1)]))
        : undefined;

  /** The batch's scored rows (trimmed after their last scored position) in engine chunks, with dropout masks when training. */
  const chunksOf = (batch: LogProbBatch, training: boolean) => {
    const scored = batch.inputIds.map((_, i) => i).filter((i) => batch.positions[i]!.length > 0);
    const sequences = scored.map((i) => batch.inputIds[i]!.slice(0, Math.max(...batch.positions[i]!) + 1));
    const chunks = engine.chunks(sequences.map((s) => s.length)).map((chunk) => {
      const rows = chunk.map((k) => sequences[k]!);
      const tokens = rows.length * Math.max(...rows.map((r) => r.length));
      return {
        chunk,
        rows,
        positions: chunk.map((k) => batch.positions[scored[k]!]!),
        masks: masksFor(tokens, training),
      };
    });
    return { chunks, scored };
  };
  /** A chunk's log-probs (row after row) into `out` at the batch's row indices. */
  const placeLogProbs = (
    out: number[][],
    scored: readonly number[],
    c: { chunk: number[]; positions: readonly (readonly number[])[] },
    tokenLogProbs: Float32Array,
  ) => {
    let at = 0;
    c.chunk.forEach((k, j) => {
      const n = c.positions[j]!.length;
      out[scored[k]!] = Array.from(tokenLogProbs.subarray(at, at + n));
      at += n;
    });
  };

  const scoreBatch = async (
    batch: LogProbBatch,
    temperature: number,
    options: { signal?: AbortSignal; withoutAdapter?: boolean },
  ) => {
    const { chunks, scored } = chunksOf(batch, false);
    const out: number[][] = batch.inputIds.map(() => []);
    for (const c of chunks) {
      throwIfAborted(options.signal, 'logProbs');
      const result = await engine.score(c.rows, c.positions, temperature, c.masks, options.withoutAdapter);
      placeLogProbs(out, scored, c, result.tokenLogProbs);
    }
    return out;
  };

  const save = async (): Promise<PolicyCheckpoint> => {
    const blobs: Record<string, Uint8Array> =
      finetune === 'full' || !lora
        ? hfModelFiles(config, loaded.weights, loaded.tokenizer, loaded.chatTemplate)
        : peftAdapterFiles(
            config,
            { ...lora.shape, alpha: lora.alpha, dropoutRate: lora.dropoutRate },
            lora.weights,
            parsed.model,
          );
    if (optimizer.step > 0)
      blobs['optimizer.safetensors'] = encodeSafetensors(
        [...optimizer.first.keys()].flatMap((name) => [
          {
            name: `first.${name}`,
            shape: [optimizer.first.get(name)!.length],
            values: optimizer.first.get(name)!,
          },
          {
            name: `second.${name}`,
            shape: [optimizer.second.get(name)!.length],
            values: optimizer.second.get(name)!,
          },
        ]),
        { step: String(optimizer.step) },
      );
    return {
      format: LLAMA_CHECKPOINT_FORMAT,
      metadata: {
        model: parsed.model,
        finetune,
        sessionCounter: state.sessionCounter,
        optimizerStep: optimizer.step,
        // The settings the moments were made under (another trainer continuing from this
        // checkpoint reads them instead of assuming this policy's defaults).
        optimizer: { ...optimizer.settings },
      },
      blobs,
    };
  };

  const policy: LlamaPolicy = {
    specificationVersion: 'v1',
    provider: 'llama',
    modalities: 'text',
    tokenizer,
    trainable: training,
    contextLength,
    modelConfig: config,
    finetune,
    trainableParameterCount,
    ...(chatFormat && { chatFormat }),
    doCheck: ensureReady,
    describe: () => description,
    begin: (promptTokenIds, callOptions) => scheduler.begin(promptTokenIds, callOptions),
    async logProbs(batch: LogProbBatch, options?: CallOptions): Promise<number[][]> {
      await ensureReady();
      throwIfAborted(options?.signal, 'logProbs');
      const temperature = checkLogProbBatch(batch, model);
      return scoreBatch(batch, temperature, { ...(options?.signal && { signal: options.signal }) });
    },
    async update(batch: LogProbBatch, lossFn: LossFunction, options?: UpdateOptions): Promise<UpdateResult> {
      await ensureReady();
      if (!training)
        throw new NotTrainableError({
          provider: 'llama',
          operation: 'update',
          message: "finetune is 'none'; set it to 'lora' or 'full'",
        });
      throwIfAborted(options?.signal, 'update');
      const temperature = checkLogProbBatch(batch, model);
      const entropyCoef = options?.entropyCoef ?? 0;
      if (!(Number.isFinite(entropyCoef) && entropyCoef >= 0))
        throw new InvalidArgumentError({
          argument: 'options.entropyCoef',
          message: `must be >= 0, got ${entropyCoef}`,
        });
      const total = batch.positions.reduce((n, p) => n + p.length, 0);
      if (total === 0)
        return { value: 0, gradNorm: 0, applied: false, skippedReason: 'no positions to score' };
      // The scored rows, trimmed after their last scored position, in the engine's chunks.
      const scoredRows = batch.inputIds.map((_, i) => i).filter((i) => batch.positions[i]!.length > 0);
      const chunks = engine
        .chunks(scoredRows.map((i) => Math.max(...batch.positions[i]!) + 1))
        .map((chunk) => chunk.map((k) => scoredRows[k]!));
      const computed = await trainingEngine.computeGradients(batch, lossFn, {
        chunks,
        temperature,
        entropyCoef,
        scored: total,
        signal: options?.signal,
      });
      const meanEntropy = computed.entropy;
      const outcome = optimizer.apply(
        trainable,
        computed.grads,
        (name) => name.endsWith('_proj.weight') || name === 'lm_head.weight' || name.includes('.lora_'),
      );
      return {
        value: computed.value - entropyCoef * meanEntropy,
        gradNorm: outcome.gradNorm,
        applied: outcome.applied,
        ...(outcome.skippedReason && { skippedReason: outcome.skippedReason }),
        metrics: { ...computed.metrics, entropy: meanEntropy, learningRate: outcome.learningRate },
      };
    },
    save,
    baseReference() {
      if (finetune === 'full')
        throw new InvalidArgumentError({
          argument: 'finetune',
          message:
            "baseReference needs the base frozen (finetune 'lora' or 'none'); with 'full', give a second policy with finetune 'none' as the reference",
        });
      return {
        async logProbs(batch: LogProbBatch, options?: CallOptions) {
          await ensureReady();
          const temperature = checkLogProbBatch(batch, model);
          return scoreBatch(batch, temperature, {
            withoutAdapter: true,
            ...(options?.signal && { signal: options.signal }),
          });
        },
      };
    },
    resetOptimizer(next) {
      optimizer = new FloatAdamW({
        ...optimizer.settings,
        learningRate: next.learningRate,
        warmupSteps: next.warmupSteps,
      });
    },
    async load(checkpoint: PolicyCheckpoint): Promise<void> {
      checkCheckpointFormat(checkpoint, LLAMA_CHECKPOINT_FORMAT);
      const counter = checkpoint.metadata.sessionCounter;
      if (!(Number.isInteger(counter) && (counter as number) >= 0))
        throw new InvalidArgumentError({
          argument: 'checkpoint.metadata.sessionCounter',
          message: `must be a non-negative integer, got ${String(counter)}`,
        });
      const file = finetune === 'full' || !lora ? 'model.safetensors' : 'adapter_model.safetensors';
      const bytes = checkpoint.blobs[file];
      if (!bytes)
        throw new InvalidArgumentError({ argument: `checkpoint.blobs['${file}']`, message: 'is missing' });
      const decoded = decodeSafetensors(bytes, { argument: `checkpoint.blobs['${file}']` });
      const incoming = new Map<string, Float32Array>();
      for (const [name, tensor] of decoded.tensors) {
        const values = float32Of(tensor);
        if (values) incoming.set(name.replace(/^base_model\.model\./, ''), values);
      }
      const target = finetune === 'full' || !lora ? loaded.weights : lora.weights;
      // Every tensor is checked before any is replaced: a refused load changes nothing.
      for (const [name, values] of target) {
        const next = incoming.get(name);
        if (!next || next.length !== values.length)
          throw new InvalidArgumentError({
            argument: `checkpoint.blobs['${file}']: ${name}`,
            message: next ? `holds ${next.length} values, expected ${values.length}` : 'is missing',
          });
      }
      // The moments too: one of another length than its weight would fail (or corrupt) the next step.
      const moments = readOptimizerMoments(checkpoint.blobs['optimizer.safetensors'], target);
      for (const [name, values] of target) values.set(incoming.get(name)!);
      optimizer.first.clear();
      optimizer.second.clear();
      for (const [name, values] of moments.first) optimizer.first.set(name, values);
      for (const [name, values] of moments.second) optimizer.second.set(name, values);
      optimizer.step = moments.step;
      state.sessionCounter = counter as number;
      // Frozen weights are session constants: a full model's new weights are fed as inputs, so
      // nothing is rebuilt; LoRA weights are inputs too.
    },
    async dispose() {
      if (state.disposed) return;
      state.disposed = true;
      await rolloutEngine.dispose();
      await trainingEngine.dispose();
    },
  };
  // llama.cpp samples the rollouts on the GGUF's own weights; logProbs and update stay this engine's.
  return parsed.rollouts === 'llama-cpp'
    ? withLlamaCppRollouts(policy, {
        model: parsed.model,
        seed: parsed.seed,
        sequencesPerContext: parsed.llamaCpp.sequencesPerContext,
        ...(parsed.llamaCpp.threads !== undefined && { threads: parsed.llamaCpp.threads }),
        gpu: parsed.llamaCpp.gpu === 'off' ? false : parsed.llamaCpp.gpu,
      })
    : policy;
}
