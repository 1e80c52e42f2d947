import { z } from 'zod';
import { parseSettings, positiveInt } from '../../provider-utils/settings';
import { LORA_TARGET_MODULES } from '../engines/llama/llama-graph';

// No ONNX Runtime import here: a configuration names these settings without loading it.

/** Who samples a Llama policy's rollouts: its own training engine, or llama.cpp on the GGUF file. */
export const LLAMA_ROLLOUT_ENGINES = ['onnx', 'llama-cpp'] as const;

/** The settings `createLlamaPolicy` takes, with their defaults (a zod schema; unknown keys are refused). */
export const llamaPolicySettingsSchema = z
  .object({
    model: z
      .string()
      .min(1)
      .describe(
        'A Hugging Face folder of a Llama-family model (config.json, model.safetensors, tokenizer.json) or a .gguf file (F32, F16, BF16, Q8_0, Q4_0, Q4_1; dequantised at load). scripts/fetch-models.sh fetches SmolLM2-135M-Instruct.',
      ),
    finetune: z
      .enum(['lora', 'full', 'none'])
      .default('lora')
      .describe(
        '`lora` trains an adapter on the frozen base (the KL reference is the base itself), `full` every weight, `none` does not train.',
      ),
    lora: z
      .object({
        rank: positiveInt().default(8),
        alpha: z.number().positive().default(16),
        dropout: z.number().min(0).lt(1).default(0),
        targetModules: z
          .array(z.enum(LORA_TARGET_MODULES))
          .min(1)
          .default(['q_proj', 'k_proj', 'v_proj', 'o_proj']),
        /** A peft adapter folder to start from (its rank, alpha and modules win). */
        adapter: z.string().min(1).optional(),
      })
      .strict()
      .default({ rank: 8, alpha: 16, dropout: 0, targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj'] }),
    optimizer: z
      .object({
        learningRate: z.number().positive().default(1e-4),
        beta1: z.number().min(0).lt(1).default(0.9),
        beta2: z.number().min(0).lt(1).default(0.999),
        epsilon: z.number().positive().default(1e-8),
        weightDecay: z.number().min(0).default(0),
        maxGradNorm: z.number().positive().nullable().default(1),
        warmupSteps: z.number().int().min(0).default(0),
      })
      .strict()
      .default({
        learningRate: 1e-4,
        beta1: 0.9,
        beta2: 0.999,
        epsilon: 1e-8,
        weightDecay: 0,
        maxGradNorm: 1,
        warmupSteps: 0,
      }),
    chatTemplate: z
      .boolean()
      .default(true)
      .describe(
        "Wrap the Searcher's prompt and each observation in the model's own chat template (when it has one).",
      ),
    seed: z.number().int().default(0),
    intraOpThreads: positiveInt()
      .optional()
      .describe("ONNX Runtime's threads inside one operator (default: its own)."),
    contextLength: positiveInt()
      .optional()
      .describe(
        "Caps the context below the model's max_position_embeddings (key/value caches grow up to it).",
      ),
    maxBatchRows: positiveInt().default(16).describe('Rollouts per decode forward.'),
    maxChunkTokens: positiveInt()
      .default(1024)
      .describe(
        'Rows x padded length per scoring or training run (bounds the activations and the logits held at once).',
      ),
    keptActivationBytes: z
      .number()
      .int()
      .nonnegative()
      .default(2 ** 31)
      .describe(
        "Activations an update keeps from its chunks' forwards for their backwards (bytes); past it a chunk's backward runs its forward again. SmolLM2 keeps about 1.2 MB a token.",
      ),
    trainingMemoryArena: z
      .union([z.boolean(), z.literal('one-run')])
      .default('one-run')
      .describe(
        "Which training sessions keep their runs' memory in ONNX Runtime's arena for the next run: `one-run` (default) the session SFT's steps and an RL step's on-policy update run in, `true` the two sessions of an RL loss's two passes as well, `false` none. An arena holds its session's largest run (a chunk's activations) for the policy's life, and the sessions' arenas add up (SmolLM2, SFT then RL: 9.0 GB peak with all three, 4.6 GB with none); without one a run maps and faults its memory afresh (LoRA steps about 15% slower).",
      ),
    coalesceSessions: z.boolean().default(true),
    rollouts: z
      .enum(LLAMA_ROLLOUT_ENGINES)
      .default('onnx')
      .describe(
        "Who samples the rollouts: `onnx` the training engine itself (float32 weights); `llama-cpp` llama.cpp through node-llama-cpp (an optional peer dependency: npm install node-llama-cpp@3.21.1) on the .gguf file's own, quantised weights, while logProbs and update stay the training engine's, which recomputes the log-probs it trains on (finetune 'lora' or 'none'; see docs/pretrained-models.md).",
      ),
    llamaCpp: z
      .object({
        sequencesPerContext: positiveInt()
          .default(16)
          .describe(
            'Rollouts one llama.cpp context holds (their turns decode in shared batches); more open another context.',
          ),
        threads: positiveInt().optional().describe("llama.cpp's CPU threads (default: the machine's cores)."),
        gpu: z
          .enum(['off', 'auto', 'cuda', 'vulkan', 'metal'])
          .default('off')
          .describe(
            "node-llama-cpp's prebuilt GPU binary to run on (`auto`: the first that loads), or `off` for the CPU.",
          ),
      })
      .strict()
      .default({ sequencesPerContext: 16, gpu: 'off' })
      .describe("How `rollouts: 'llama-cpp'` runs."),
  })
  .strict();

/** What `createLlamaPolicy` takes (the schema's input: defaults may be left out). */
export type LlamaPolicySettings = z.input<typeof llamaPolicySettingsSchema>;
export type ParsedLlamaPolicySettings = z.output<typeof llamaPolicySettingsSchema>;

export function parseLlamaPolicySettings(settings: LlamaPolicySettings): ParsedLlamaPolicySettings {
  return parseSettings('createLlamaPolicy', llamaPolicySettingsSchema, settings);
}

/** The settings `createLlamaGenerator` takes, with their defaults (unknown keys are refused). */
export const llamaGeneratorSettingsSchema = z
  .object({
    model: z.string().min(1).describe('A Hugging Face folder or a GGUF file of a Llama-family model.'),
    maxNewTokens: positiveInt().default(24).describe('Tokens of the answer at most.'),
    maxEvidenceTokens: positiveInt()
      .default(768)
      .describe("The evidence's tokens in the prompt at most (pages in the Searcher's order, the last cut)."),
    instructions: z
      .string()
      .default(
        'Answer the question using only the evidence. Reply with the answer alone: a name, a number or a short phrase, not a sentence.',
      )
      .describe('The instruction before the evidence.'),
    intraOpThreads: positiveInt().optional().describe("ONNX Runtime's threads inside one operator."),
  })
  .strict();

/** What `createLlamaGenerator` takes. */
export type LlamaGeneratorSettings = z.input<typeof llamaGeneratorSettingsSchema>;
