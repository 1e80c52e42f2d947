import { z } from 'zod';
import { llamaGeneratorSettingsSchema, llamaPolicySettingsSchema } from '../adapters/llama/settings';
import { onnxPolicySettingsSchema } from '../adapters/onnx/settings';
import { tfjsPolicySettingsSchema } from '../adapters/tfjs/settings';
import { ConfigValidationError } from '../core/errors';
import { defineAdapter } from '../provider-utils/adapter-definition';

// The in-process model adapters (tfjs, ONNX Runtime, Llama). Their definitions sit here, not in
// their folders, while the policy engines are being regrouped into one family; each loads its
// runtime in `create` only.

/** `adapters.policy: {type: 'tfjs', ..., tokenizer}`: the trainable TensorFlow.js transformer. */
export const tfjsPolicyAdapter = defineAdapter({
  port: 'policy',
  type: 'tfjs',
  settings: tfjsPolicySettingsSchema.extend({
    tokenizer: z
      .discriminatedUnion('kind', [
        z.object({ kind: z.literal('protocol') }).strict(),
        z.object({ kind: z.literal('vocabulary'), words: z.array(z.string()).min(1) }).strict(),
      ])
      .prefault({ kind: 'protocol' })
      .describe(
        'The byte-level protocol tokenizer, or words of a corpus as single tokens (bytes for the rest).',
      ),
  }),
  packages: ['@tensorflow/tfjs'],
  inputPaths: ['initFrom'],
  description: '`tfjs` (trainable)',
  async create({ tokenizer, ...settings }, { field }) {
    if (settings.initFrom && tokenizer.kind === 'vocabulary')
      throw new ConfigValidationError({
        issues: [
          {
            field: `${field}.tokenizer`,
            message: `initFrom '${settings.initFrom}' brings its own tokenizer (tokenizer.json): leave tokenizer out`,
          },
        ],
      });
    const [tfjs, tokenizers] = await Promise.all([
      import('../adapters/tfjs/index'),
      import('../core/protocol/tokenizer'),
    ]);
    // A model folder (initFrom) brings its own model and tokenizer (the schema's model defaults are not the user's).
    if (settings.initFrom) return tfjs.createTfjsPolicy({ ...settings, model: undefined }, {});
    return tfjs.createTfjsPolicy(settings, {
      tokenizer:
        tokenizer.kind === 'vocabulary'
          ? tokenizers.createVocabularyTokenizer(tokenizer.words)
          : tokenizers.createProtocolTokenizer(),
    });
  },
});

/** `adapters.policy: {type: 'onnx', modelDir, ...}`: a pretrained Optimum export on ONNX Runtime, rollouts only. */
export const onnxPolicyAdapter = defineAdapter({
  port: 'policy',
  type: 'onnx',
  settings: onnxPolicySettingsSchema,
  inputPaths: ['modelDir'],
  packages: ['onnxruntime-node', '@huggingface/tokenizers'],
  description:
    '`onnx` (a pretrained Optimum export run by ONNX Runtime: evaluation and rollout collection only, a training run refuses it)',
  create: (settings) => import('../adapters/onnx/index').then((m) => m.createOnnxPolicy(settings)),
});

const LLAMA_PACKAGES = ['onnxruntime-node', '@huggingface/tokenizers', '@huggingface/jinja'];

/** `adapters.policy: {type: 'llama', model, ...}`: a pretrained Llama-family model, rolled out and trained in process. */
export const llamaPolicyAdapter = defineAdapter({
  port: 'policy',
  type: 'llama',
  settings: llamaPolicySettingsSchema,
  packages: LLAMA_PACKAGES,
  inputPaths: ['model', 'lora.adapter'],
  description:
    '`llama` (a pretrained Llama-family model, a Hugging Face folder or a GGUF file, rolled out and trained in process with LoRA or fully)',
  create: (settings) => import('../adapters/llama/index').then((m) => m.createLlamaPolicy(settings)),
});

/** `adapters.generator: {type: 'llama', model, ...}`: a local Llama-family model as the frozen Generator. */
export const llamaGeneratorAdapter = defineAdapter({
  port: 'generator',
  type: 'llama',
  settings: llamaGeneratorSettingsSchema,
  packages: LLAMA_PACKAGES,
  inputPaths: ['model'],
  create: (settings) => import('../adapters/llama/index').then((m) => m.createLlamaGenerator(settings)),
});
