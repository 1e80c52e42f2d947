import { encodeSafetensors } from '../../provider-utils/safetensors';
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
