import { InvalidArgumentError } from '../../core/errors';
import { decodeSafetensors, encodeSafetensors, float32Of } from '../../provider-utils/safetensors';
import { type LlamaConfig, llamaConfigJson, llamaWeightShapes } from '../engines/llama/config';
import type { WeightMap } from '../engines/llama/engine';
import { type LoraShape, loraWeightShapes } from '../engines/llama/llama-graph';

// Checkpoints a Hugging Face stack loads as they are: a full model as a transformers folder
// (config.json, model.safetensors in float32, generation_config.json, the tokenizer's files), and
// LoRA as a peft adapter folder (adapter_config.json, adapter_model.safetensors with peft's
// `base_model.model.` key prefix) to apply on the base model it names.

const encoder = new TextEncoder();
const json = (value: unknown) => encoder.encode(`${JSON.stringify(value, null, 2)}\n`);

export function hfModelFiles(
  config: LlamaConfig,
  weights: WeightMap,
  tokenizer: { json: Record<string, unknown>; config: Record<string, unknown> } | null,
  chatTemplate: string | null,
): Record<string, Uint8Array> {
  const files: Record<string, Uint8Array> = {
    'config.json': json(llamaConfigJson(config)),
    'generation_config.json': json({
      ...(config.bosTokenId !== null && { bos_token_id: config.bosTokenId }),
      ...(config.eosTokenIds.length > 0 && {
        eos_token_id: config.eosTokenIds.length === 1 ? config.eosTokenIds[0] : config.eosTokenIds,
      }),
    }),
    'model.safetensors': encodeSafetensors(
      llamaWeightShapes(config).map(({ name, shape }) => ({ name, shape, values: weights.get(name)! })),
      { format: 'pt' },
    ),
  };
  if (tokenizer) {
    files['tokenizer.json'] = json(tokenizer.json);
    files['tokenizer_config.json'] = json({
      ...tokenizer.config,
      ...(chatTemplate && { chat_template: chatTemplate }),
    });
  }
  return files;
}

export function peftAdapterFiles(
  config: LlamaConfig,
  lora: LoraShape & { alpha: number; dropoutRate: number },
  weights: WeightMap,
  baseModel: string,
): Record<string, Uint8Array> {
  return {
    'adapter_config.json': json({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: baseModel,
      r: lora.rank,
      lora_alpha: lora.alpha,
      lora_dropout: lora.dropoutRate,
      target_modules: [...lora.targets],
      bias: 'none',
      fan_in_fan_out: false,
      use_rslora: false,
      use_dora: false,
      inference_mode: true,
      init_lora_weights: true,
      modules_to_save: null,
    }),
    'adapter_model.safetensors': encodeSafetensors(
      loraWeightShapes(config, lora).map(({ name, shape }) => ({
        name: `base_model.model.${name}`,
        shape,
        values: weights.get(name)!,
      })),
      { format: 'pt' },
    ),
  };
}

/**
 * AdamW's moments from a checkpoint's `optimizer.safetensors` (`first.NAME`, `second.NAME`, the step
 * in its metadata), each checked against its trainable weight's length before anything is loaded:
 * a moment of another length would fail (or corrupt) the next step. No file: no moments, step 0.
 */
export function readOptimizerMoments(
  bytes: Uint8Array | undefined,
  weights: WeightMap,
): { first: WeightMap; second: WeightMap; step: number } {
  const argument = "checkpoint.blobs['optimizer.safetensors']";
  const first: WeightMap = new Map();
  const second: WeightMap = new Map();
  if (!bytes) return { first, second, step: 0 };
  const moments = decodeSafetensors(bytes, { argument });
  for (const [name, tensor] of moments.tensors) {
    const into = name.startsWith('first.') ? first : name.startsWith('second.') ? second : null;
    if (!into) continue;
    const weight = name.slice(name.indexOf('.') + 1);
    const values = float32Of(tensor)!;
    const expected = weights.get(weight)?.length;
    if (values.length !== expected)
      throw new InvalidArgumentError({
        argument: `${argument}: ${name}`,
        message:
          expected === undefined
            ? 'names no trainable weight'
            : `holds ${values.length} values, expected ${expected}`,
      });
    into.set(weight, values);
  }
  return { first, second, step: Number(moments.metadata.step ?? 0) };
}
