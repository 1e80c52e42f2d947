import { InvalidArgumentError } from '../../core/errors';
import { createProtocolTokenizer } from '../../core/protocol/tokenizer';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import type {
  LogProbBatch,
  LossFunction,
  PolicyBackend,
  PolicyDescription,
  UpdateOptions,
} from '../../ports/policy-backend';
import type { Tokenizer } from '../../ports/types';
import { AdamW, type AdamWSettings } from './adamw';
import { selectTfjsBackend, type BackendModuleLoader, type TfjsBackendName } from './backends';
import { createCheckpoints } from './checkpoint';
import type { PretrainedModel } from './hf/pretrained';
import { cacheShapeOf, createDecoder } from './decoder';
import { selectEngines, type TfjsTrainingEngine } from './engine-selection';
import type { RolloutEngine } from '../engines/engine';
import { parseTfjsPolicySettings, transformerConfigOf, type TfjsPolicySettings } from './settings';
import type { PolicyContext, PolicyState } from './state';
import { gradients, logProbs, resetOptimizer, sequenceLogits, update } from './training';
import { Transformer, type TransformerConfig } from '../engines/transformer/transformer';

export interface TfjsPolicy extends PolicyBackend {
  readonly provider: 'tfjs';
  /** Every weight trains: parameterCount twice, the backend's name, the tags `initFrom` added. */
  describe(): PolicyDescription;
  /** The backend in use (`tensorflow-gpu`, `tensorflow`, `wasm` or `cpu`) and those passed over. */
  readonly backend: { name: TfjsBackendName; skipped: Array<{ name: TfjsBackendName; reason: string }> };
  readonly modelConfig: TransformerConfig;
  /** The protocol tags added as tokens to the tokenizer of an `initFrom` folder (none otherwise). */
  readonly addedTags: readonly string[];
  readonly parameterCount: number;
  /** Optimizer steps taken (skipped steps not counted). */
  readonly optimizerStep: number;
  /**
   * The gradient `update` would apply (before clipping), by parameter name, without changing
   * anything: for finite-difference checks and debugging.
   */
  gradients(
    batch: LogProbBatch,
    lossFn: LossFunction,
    options?: UpdateOptions,
  ): Promise<{ value: number; gradients: Record<string, Float32Array> }>;
  /**
   * The logits [T][V] of one sequence (a full forward; no temperature): for comparing the model
   * with another implementation of it (transformers' GPT2LMHeadModel on a saved checkpoint).
   */
  logits(inputIds: readonly number[]): Promise<Float32Array[]>;
  /** Starts a new optimizer (zero moments, step 0), optionally with other settings (e.g. after SFT). */
  resetOptimizer(settings?: Partial<AdamWSettings>): void;
  /** Frees the weights and optimizer state. */
  dispose(): void;
}

/**
 * Objects `createTfjsPolicy` takes besides its settings: the tokenizer, and a backend loader for
 * tests.
 */
export interface CreateTfjsPolicyOptions {
  /** The tokenizer (default: the byte-level protocol tokenizer, every tag one token). */
  tokenizer?: Tokenizer;
  /** Loads backend packages; for tests. */
  loadBackendModule?: BackendModuleLoader;
  /** Loads `onnxruntime-node` for `rollouts: 'onnx'` and `training: 'onnx'`; for tests. */
  loadOnnxRuntime?: () => Promise<unknown>;
  /** Bytes of activations `training: 'onnx'` keeps between a chunk's forward and its backward; for tests. */
  onnxKeptActivationBytes?: number;
  /** Weight bytes up to which `rollouts: 'onnx'` makes the weights constants of its sessions; for tests. */
  onnxConstantWeightBytes?: number;
}

/** An `initFrom` folder, refused with a tokenizer or model settings of its own (the folder sets both). */
async function readPretrained(
  dir: string,
  settings: TfjsPolicySettings,
  options: CreateTfjsPolicyOptions,
): Promise<PretrainedModel> {
  if (options.tokenizer)
    throw new InvalidArgumentError({
      argument: 'tokenizer',
      message: `initFrom '${dir}' brings its own tokenizer (tokenizer.json): leave the tokenizer option out`,
    });
  if (settings.model !== undefined)
    throw new InvalidArgumentError({
      argument: 'model',
      message: `initFrom '${dir}' sets the model (config.json): leave createTfjsPolicy's model settings out`,
    });
  const { readPretrainedFolder } = await import('./hf/pretrained');
  return readPretrainedFolder(dir);
}

/**
 * A trainable causal transformer Searcher on TensorFlow.js. Rollouts are sessions whose key/value
 * caches live across turns; concurrent sessions (one per group in the streaming pipeline) decode
 * together, one forward per token step for all of them. Sampling is temperature + top-p from a
 * seeded stream per rollout, and each TokenStep's log-prob is log softmax(logits / T), the same
 * number `logProbs` computes with a full forward. The forwards of rollouts and the gradients of
 * `update` are two engines (src/adapters/engines/engine.ts), tfjs by default: `rollouts: 'onnx'` runs the rollout
 * forwards through ONNX Runtime, fed the live weights; `training: 'onnx'` computes the gradients
 * there too, AdamW staying on tfjs.
 */
export async function createTfjsPolicy(
  settings: TfjsPolicySettings = {},
  options: CreateTfjsPolicyOptions = {},
): Promise<TfjsPolicy> {
  const parsed = parseTfjsPolicySettings(settings);
  const pretrained = parsed.initFrom ? await readPretrained(parsed.initFrom, settings, options) : null;
  const tokenizer = pretrained?.tokenizer ?? options.tokenizer ?? createProtocolTokenizer();
  const selected = await selectTfjsBackend(parsed.backend, options.loadBackendModule);
  // Before any weights exist: a missing onnxruntime-node fails creation with nothing to free.
  const engines = await selectEngines(parsed, options.loadOnnxRuntime, {
    keptActivationBytes: options.onnxKeptActivationBytes,
    constantWeightBytes: options.onnxConstantWeightBytes,
  });
  const modelConfig = pretrained?.config ?? transformerConfigOf(parsed.model, tokenizer.vocabSize);
  // Stream 1 of the seed draws the weights; sessions sample from stream 2 (see the decoder).
  const model = new Transformer(modelConfig, createRandom(parsed.seed, RANDOM_STREAMS.modelWeights));
  if (pretrained) model.assignWeights(pretrained.weights);
  const state: PolicyState = {
    model,
    optimizer: new AdamW(model.parameters, parsed.optimizer),
    sessionCounter: 0,
    samplingSeed: parsed.seed,
    disposed: false,
  };
  const context: PolicyContext = {
    settings: parsed,
    tokenizer,
    ...(pretrained && { tokenizerFiles: pretrained.tokenizerFiles }),
    modelConfig,
    backendTfName: selected.tfName,
    state,
  };
  let training: TfjsTrainingEngine | undefined;
  let rollouts: RolloutEngine;
  try {
    training = await engines.createTraining(context);
    rollouts = await engines.createRollouts(context, cacheShapeOf(context));
  } catch (error) {
    model.dispose();
    state.optimizer.dispose();
    void training?.dispose();
    throw error;
  }
  const trainingEngine = training;
  const checkpoints = createCheckpoints(context);
  const decoder = createDecoder(context, rollouts);
  return {
    specificationVersion: 'v1',
    provider: 'tfjs',
    modalities: 'text',
    tokenizer,
    trainable: true,
    contextLength: modelConfig.contextLength,
    backend: { name: selected.name, skipped: selected.skipped },
    modelConfig,
    addedTags: pretrained?.addedTags ?? [],
    get parameterCount() {
      return model.parameterCount;
    },
    get optimizerStep() {
      return state.optimizer.step;
    },
    begin: (promptTokenIds, callOptions) => decoder.begin(promptTokenIds, callOptions),
    logProbs: (batch, callOptions) => logProbs(context, batch, callOptions),
    logits: (inputIds) => sequenceLogits(context, inputIds),
    update: (batch, lossFn, updateOptions) => update(context, trainingEngine, batch, lossFn, updateOptions),
    gradients: (batch, lossFn, updateOptions) =>
      gradients(context, trainingEngine, batch, lossFn, updateOptions),
    save: () => checkpoints.save(),
    load: (checkpoint) => checkpoints.load(checkpoint),
    resetOptimizer: (overrides) => resetOptimizer(context, overrides),
    describe: () => ({
      parameterCount: model.parameterCount,
      trainableParameterCount: model.parameterCount,
      backend: selected.name,
      addedTags: pretrained?.addedTags ?? [],
    }),
    dispose() {
      if (state.disposed) return;
      state.disposed = true;
      model.dispose();
      state.optimizer.dispose();
      void rollouts.dispose();
      void trainingEngine.dispose();
    },
  };
}
