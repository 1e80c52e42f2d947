import { join } from 'node:path';
import { InvalidArgumentError, NotTrainableError, throwIfAborted } from '../../core/errors';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import type { CallOptions } from '../../ports/common';
import type {
  LogProbBatch,
  PolicyBackend,
  PolicyCheckpoint,
  PolicyDescription,
  UpdateResult,
} from '../../ports/policy-backend';
import { emptyKvCache } from '../../rollout-engine/kv-cache';
import { createRolloutScheduler } from '../../rollout-engine/rollout-scheduler';
import { forwardLast, scoreSequences, type OnnxModel, type OnnxRow } from './forward';
import { checkCausalLmLayout, readCausalLmConfig, type GraphValue } from './layout';
import { createOnnxSession } from '../engines/onnx-graph/session';
import { readFileBytes, readJsonObject } from '../../provider-utils/json-file';
import { ort } from './runtime';
import { parseOnnxPolicySettings, type OnnxExecutionProvider, type OnnxPolicySettings } from './settings';
import { createHfTokenizer } from '../../provider-utils/hf-tokenizer';
import { checkOnnxWeights } from './weights';
import { checkCheckpointFormat } from '../../provider-utils/checkpoint-format';

export const ONNX_CHECKPOINT_FORMAT = 'searcher-rl.onnx-reference.v1';

export interface OnnxPolicy extends PolicyBackend {
  readonly provider: 'onnx';
  readonly trainable: false;
  readonly contextLength: number;
  readonly executionProvider: OnnxExecutionProvider;
  /** ONNX Runtime's execution provider as the backend; no parameter count (the graph's initializers are not only weights), no added tags. */
  describe(): PolicyDescription;
  /** What the graph and config.json say about the model. */
  readonly modelConfig: {
    layers: number;
    heads: number;
    headWidth: number;
    vocabSize: number;
    contextLength: number;
    hasPositionIds: boolean;
    eosTokenIds: readonly number[];
  };
  /** Releases the ONNX Runtime session. */
  dispose(): Promise<void>;
}

const NOT_TRAINABLE =
  'ONNX Runtime runs the exported graph forward only (no gradients); use it for evaluation and rollout collection, and train with an in-process trainable backend (searcher-rl/tfjs) or outside (e.g. verl), then export again.';

/**
 * A rollouts-only Searcher policy on a pretrained causal LM exported to ONNX in Hugging Face
 * Optimum's layout, run by ONNX Runtime (CPU, or CUDA when its binaries are installed). Sessions
 * keep each rollout's key/value cache across turns and decode concurrent sessions together (the
 * same scheduler, sampling and stop rules as the tfjs policy); each TokenStep's log-prob is
 * log softmax(logits / T), the number `logProbs` gives for the same sequence. `update` throws
 * NotTrainableError: this backend does not train.
 */
export async function createOnnxPolicy(settings: OnnxPolicySettings): Promise<OnnxPolicy> {
  const parsed = parseOnnxPolicySettings(settings);
  const dir = parsed.modelDir;
  const modelPath = join(dir, parsed.modelFile);
  // A missing optional file reads as {} (no generation defaults, no tokenizer settings).
  const readJson = async (name: string, required: boolean) =>
    (await readJsonObject(join(dir, name), 'modelDir', required)) ?? {};
  const [config, generation, tokenizerJson, tokenizerConfig] = await Promise.all([
    readJson('config.json', true),
    readJson('generation_config.json', false),
    readJson('tokenizer.json', true),
    readJson('tokenizer_config.json', false),
  ]);
  const modelBytes = await readFileBytes(modelPath, 'modelDir');
  // ONNX Runtime runs NaN and Infinity weights without complaint: refused here, naming the initializer.
  checkOnnxWeights(modelPath, modelBytes);
  const session = await createOnnxSession(ort, modelPath, {
    executionProvider: parsed.executionProvider,
    cudaDeviceId: parsed.cudaDeviceId,
    ...(parsed.intraOpThreads !== undefined && { intraOpThreads: parsed.intraOpThreads }),
  });
  let model: OnnxModel;
  let facts: ReturnType<typeof readCausalLmConfig>;
  try {
    const layout = checkCausalLmLayout(
      modelPath,
      session.inputMetadata as readonly GraphValue[],
      session.outputMetadata as readonly GraphValue[],
    );
    facts = readCausalLmConfig(join(dir, 'config.json'), config, generation, layout, parsed.contextLength);
    const contextLength = Math.min(facts.contextLength, parsed.contextLength ?? Number.POSITIVE_INFINITY);
    model = {
      session,
      layout,
      shape: {
        layers: layout.layers,
        heads: facts.heads,
        headWidth: facts.headWidth,
        vocabSize: facts.vocabSize,
        contextLength,
      },
      maxBatchRows: parsed.maxBatchRows,
    };
  } catch (error) {
    await session.release();
    throw error;
  }
  const { shape } = model;
  const tokenizer = createHfTokenizer(tokenizerJson, tokenizerConfig, {
    vocabSize: shape.vocabSize,
    eosTokenId: facts.eosTokenIds[0]!,
  });
  const state = { sessionCounter: 0, disposed: false };
  const ensureReady = async () => {
    if (state.disposed)
      throw new InvalidArgumentError({ argument: 'policy', message: 'this OnnxPolicy was disposed' });
  };
  const scheduler = createRolloutScheduler<OnnxRow>({
    provider: 'onnx',
    tokenizer,
    vocabSize: shape.vocabSize,
    contextLength: shape.contextLength,
    coalesceSessions: parsed.coalesceSessions,
    extraEosTokenIds: facts.eosTokenIds.slice(1),
    ensureReady,
    forward: (rows, temperature) => forwardLast(model, rows, temperature),
    createRow: (ids, sessionIndex, r) => ({
      sequence: [...ids],
      cached: 0,
      ...emptyKvCache(shape),
      random: createRandom(parsed.seed, RANDOM_STREAMS.sampling, sessionIndex, r),
      busy: false,
      released: false,
    }),
    releaseRow: (row) => {
      row.released = true;
      Object.assign(row, emptyKvCache(shape));
    },
    nextSessionIndex: () => state.sessionCounter++,
  });
  const notTrainable = (operation: string) =>
    new NotTrainableError({ provider: 'onnx', operation, message: NOT_TRAINABLE });

  return {
    specificationVersion: 'v1',
    provider: 'onnx',
    modalities: 'text',
    tokenizer,
    trainable: false,
    contextLength: shape.contextLength,
    executionProvider: parsed.executionProvider,
    modelConfig: {
      layers: shape.layers,
      heads: shape.heads,
      headWidth: shape.headWidth,
      vocabSize: shape.vocabSize,
      contextLength: shape.contextLength,
      hasPositionIds: model.layout.hasPositionIds,
      eosTokenIds: facts.eosTokenIds,
    },
    doCheck: ensureReady,
    describe: () => ({ backend: `onnxruntime-${parsed.executionProvider}`, addedTags: [] }),
    begin: (promptTokenIds, callOptions) => scheduler.begin(promptTokenIds, callOptions),
    async logProbs(batch: LogProbBatch, options?: CallOptions): Promise<number[][]> {
      await ensureReady();
      throwIfAborted(options?.signal, 'logProbs');
      if (batch.inputIds.length !== batch.positions.length)
        throw new InvalidArgumentError({
          argument: 'batch.positions',
          message: `has ${batch.positions.length} rows for ${batch.inputIds.length} sequences`,
        });
      batch.inputIds.forEach((ids, i) => {
        if (ids.length > shape.contextLength)
          throw new InvalidArgumentError({
            argument: `batch.inputIds[${i}]`,
            message: `has ${ids.length} tokens; the model's context is ${shape.contextLength}`,
          });
        ids.forEach((id, t) => {
          if (!(Number.isInteger(id) && id >= 0 && id < shape.vocabSize))
            throw new InvalidArgumentError({
              argument: `batch.inputIds[${i}][${t}]`,
              message: `token id ${id} is outside the vocabulary`,
            });
        });
        for (const p of batch.positions[i]!) {
          if (!(Number.isInteger(p) && p >= 1 && p < ids.length))
            throw new InvalidArgumentError({
              argument: `batch.positions[${i}]`,
              message: `position ${p} is not in 1..${ids.length - 1} (position 0 has no log-prob)`,
            });
        }
      });
      const scored = batch.inputIds.map((_, i) => i).filter((i) => batch.positions[i]!.length > 0);
      const out: number[][] = batch.inputIds.map(() => []);
      // Only as much of each sequence as its last scored position needs.
      const results = await scoreSequences(
        model,
        scored.map((i) => batch.inputIds[i]!.slice(0, Math.max(...batch.positions[i]!) + 1)),
        scored.map((i) => batch.positions[i]!),
        batch.temperature ?? 1,
      );
      scored.forEach((i, k) => {
        out[i] = results[k]!;
      });
      return out;
    },
    async update(): Promise<UpdateResult> {
      throw notTrainable('update');
    },
    // A checkpoint names the model and carries the sampling state (no weights: the model folder is the weights).
    async save(): Promise<PolicyCheckpoint> {
      return {
        format: ONNX_CHECKPOINT_FORMAT,
        metadata: {
          modelDir: dir,
          modelFile: parsed.modelFile,
          seed: parsed.seed,
          sessionCounter: state.sessionCounter,
        },
        blobs: {},
      };
    },
    async load(checkpoint: PolicyCheckpoint): Promise<void> {
      checkCheckpointFormat(
        checkpoint,
        ONNX_CHECKPOINT_FORMAT,
        'an ONNX policy loads no weights: point modelDir at another export instead',
      );
      const counter = checkpoint.metadata.sessionCounter;
      if (!(Number.isInteger(counter) && (counter as number) >= 0))
        throw new InvalidArgumentError({
          argument: 'checkpoint.metadata.sessionCounter',
          message: `must be a non-negative integer, got ${String(counter)}`,
        });
      state.sessionCounter = counter as number;
    },
    async dispose() {
      if (state.disposed) return;
      state.disposed = true;
      await session.release();
    },
  };
}
