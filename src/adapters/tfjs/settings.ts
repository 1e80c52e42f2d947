import { z } from 'zod';
import { InvalidArgumentError } from '../../core/errors';
import { parseSettings, positiveInt } from '../../provider-utils/settings';
import type { AdamWSettings } from './adamw';
import type { TransformerConfig } from '../engines/transformer/transformer';

// No TensorFlow.js import here: a configuration names these settings without loading tfjs.

/** TensorFlow.js backends this adapter knows, highest priority first. */
export const TFJS_BACKENDS = ['tensorflow-gpu', 'tensorflow', 'wasm', 'cpu'] as const;
/** A TensorFlow.js backend name (`TFJS_BACKENDS`). */
export type TfjsBackendName = (typeof TFJS_BACKENDS)[number];

/** v2: a Hugging Face GPT-2 folder with the optimizer beside it (hf/checkpoint-files.ts); v1 (float32 blobs) is still read. */
export const CHECKPOINT_FORMAT = 'searcher-rl.tfjs-transformer.v2';
export const CHECKPOINT_FORMAT_V1 = 'searcher-rl.tfjs-transformer.v1';

/**
 * The tfjs policy's settings as a zod schema: the model (or a folder to start from), backend,
 * optimizer, rollout and training engines, and seed.
 */
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
      .prefault({}),
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
      .prefault({}),
    /**
     * A Hugging Face GPT-2-family folder (GPT-2, DistilGPT-2, a checkpoint written here) to start
     * from: its `config.json` sets the model (leave `model` out), `model.safetensors` the weights,
     * `tokenizer.json` the tokenizer (the protocol tags added as tokens where it lacks them).
     */
    initFrom: z.string().min(1).optional(),
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
    /**
     * Where rollouts (`begin` / `generateTurn`) run their forwards. `tfjs`: the training backend.
     * `onnx`: the same model as an ONNX graph in ONNX Runtime (`onnxruntime-node`, an optional
     * peer), fed the live weights, with the same sampling; training and `logProbs` stay on tfjs.
     */
    rollouts: z.enum(['tfjs', 'onnx']).default('tfjs'),
    /**
     * Where `update` and `gradients` compute the gradients. `tfjs`: the training backend. `onnx`:
     * a hand-built forward + backward ONNX graph in ONNX Runtime (`onnxruntime-node`), fed the live
     * weights; AdamW and `logProbs` stay on tfjs, so checkpoints are the same either way.
     */
    training: z.enum(['tfjs', 'onnx']).default('tfjs'),
    /** ONNX Runtime's settings, for `rollouts: 'onnx'` and `training: 'onnx'`. */
    onnx: z
      .object({
        /** Intra-op threads of each ONNX Runtime session (rollouts, and training unless `trainingThreads` says). */
        intraOpThreads: positiveInt().default(1),
        /**
         * Intra-op threads of the training sessions (`training: 'onnx'`); default `intraOpThreads`.
         * A second thread pays where a training step's operators are large (the 860k-parameter
         * model of bench:training: 1.5x); at the demo's width 64 it barely does (SFT 71.0 s against
         * 73.0 s). The last bits of the gradients depend on the count (ONNX Runtime splits
         * the sums by thread), so runs compare at the same count.
         */
        trainingThreads: positiveInt().optional(),
        /**
         * Data-parallel lanes of `training: 'onnx'` (default 1 here; a run configuration's
         * `policy.trainingLanes` defaults to 2): each update's rows are split into this many
         * shares, run side by side, one on the calling thread and the others each on a worker
         * thread with its own sessions; the gradients are summed in row order. A worker loads
         * onnxruntime-node itself (resolved from this package, not through `loadOnnxRuntime`); a
         * lane whose worker died fails every later update (create the policy again).
         */
        trainingLanes: positiveInt().optional(),
      })
      .strict()
      .prefault({}),
    /** Bound on rows x tokens x keys x heads per forward (attention scores), to cap memory. */
    maxAttentionElements: positiveInt().default(16_000_000),
  })
  .strict();

/** Settings of `createTfjsPolicy` (`tfjsPolicySettingsSchema`). */
export type TfjsPolicySettings = z.input<typeof tfjsPolicySettingsSchema>;

/** Settings with every default filled in. */
export type ParsedTfjsPolicySettings = z.output<typeof tfjsPolicySettingsSchema>;

/** Errors name the field under `createTfjsPolicy.`, as the settings errors of the other adapters do. */
export function parseTfjsPolicySettings(settings: TfjsPolicySettings): ParsedTfjsPolicySettings {
  const parsed = parseSettings('createTfjsPolicy', tfjsPolicySettingsSchema, settings);
  const { width, heads } = parsed.model;
  if (width % heads !== 0)
    throw new InvalidArgumentError({
      argument: 'model.width',
      message: `must be divisible by model.heads (${heads}), got ${width}`,
    });
  return parsed;
}

export function transformerConfigOf(
  model: ParsedTfjsPolicySettings['model'],
  vocabSize: number,
): TransformerConfig {
  return {
    vocabSize,
    contextLength: model.contextLength,
    layers: model.layers,
    width: model.width,
    heads: model.heads,
    mlpWidth: model.mlpWidth ?? 4 * model.width,
  };
}

/**
 * Optimizer settings from outside creation (a checkpoint's metadata, `resetOptimizer`) pass the
 * same schema as the factory's, so a hand-edited checkpoint cannot slip in a negative learning rate.
 */
export function parseOptimizerSettings(value: unknown, where: string): AdamWSettings {
  return parseSettings(where, tfjsPolicySettingsSchema.shape.optimizer, value);
}
