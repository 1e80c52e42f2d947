import { z } from 'zod';
import { parseSettings, positiveInt } from '../../provider-utils/settings';

// No ONNX Runtime import here: a configuration names these settings without loading it.

import {
  ONNX_EXECUTION_PROVIDERS,
  type OnnxExecutionProvider,
} from '../engines/onnx-graph/execution-providers';

export { ONNX_EXECUTION_PROVIDERS, type OnnxExecutionProvider };

/**
 * The ONNX policy's settings as a zod schema: the model folder, execution provider, threads, seed
 * and batching.
 */
export const onnxPolicySettingsSchema = z
  .object({
    modelDir: z
      .string()
      .min(1)
      .describe(
        "A folder in Hugging Face Optimum's causal-LM export layout: model.onnx (with past_key_values), tokenizer.json, config.json, generation_config.json.",
      ),
    modelFile: z
      .string()
      .min(1)
      .default('model.onnx')
      .describe('The graph inside modelDir (e.g. model_quantized.onnx).'),
    executionProvider: z
      .enum(ONNX_EXECUTION_PROVIDERS)
      .default('cpu')
      .describe("`cpu`, or `cuda` (needs onnxruntime-node's CUDA 12 binaries, CUDA 12 and cuDNN 9)."),
    intraOpThreads: positiveInt()
      .optional()
      .describe("Threads ONNX Runtime uses inside one operator (default: ONNX Runtime's, one per core)."),
    cudaDeviceId: z.number().int().min(0).default(0).describe('The GPU, with executionProvider `cuda`.'),
    /** Seeds the sampling streams (one per rollout). */
    seed: z.number().int().default(0),
    contextLength: positiveInt()
      .optional()
      .describe(
        "Caps the context below the model's own (config.json's max_position_embeddings / n_positions); gives it for a model whose config.json names none (ALiBi: BLOOM, MPT).",
      ),
    coalesceSessions: z
      .boolean()
      .default(true)
      .describe(
        'Decode the turns of concurrent sessions in shared forwards (faster); `false`: each session alone.',
      ),
    maxBatchRows: positiveInt()
      .default(32)
      .describe('Rows (rollouts) per forward; more wait for the next one.'),
  })
  .strict();

/** Settings of `createOnnxPolicy` (`onnxPolicySettingsSchema`). */
export type OnnxPolicySettings = z.input<typeof onnxPolicySettingsSchema>;
export type ParsedOnnxPolicySettings = z.output<typeof onnxPolicySettingsSchema>;

export function parseOnnxPolicySettings(settings: OnnxPolicySettings): ParsedOnnxPolicySettings {
  return parseSettings('createOnnxPolicy', onnxPolicySettingsSchema, settings);
}
