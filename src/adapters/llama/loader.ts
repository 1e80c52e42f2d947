import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from '../../core/errors';
import { readFileBytes, readJsonObject } from '../../provider-utils/json-file';
import { decodeSafetensors, float32Of } from '../../provider-utils/safetensors';
import { type LlamaConfig, llamaWeightShapes, parseLlamaConfig } from '../engines/llama/config';
import type { WeightMap } from '../engines/llama/engine';
import { readGguf } from './gguf';
import { ggufLlamaModel } from './gguf-llama';
import { ggufTokenizerFiles } from './gguf-tokenizer';
import { LORA_TARGET_MODULES, type LoraTargetModule, loraWeightShapes } from '../engines/llama/llama-graph';

// Loading a Llama-family model offline: a Hugging Face folder (config.json, model.safetensors or
// sharded with model.safetensors.index.json, F32/F16/BF16; tokenizer.json and tokenizer_config.json
// with the chat template) or one GGUF file (dequantised at load; the config and the tokenizer from
// its metadata). Nothing is fetched: a path that is not there is refused by name.

/** What `loadLlamaModel` gives: the config, the float32 weights by Hugging Face name, the tokenizer files and the chat template. */
export interface LoadedLlama {
  source: string;
  config: LlamaConfig;
  weights: WeightMap;
  /** Hugging Face tokenizer files; null when the folder has none (the engine runs, a policy refuses). */
  tokenizer: { json: Record<string, unknown>; config: Record<string, unknown> } | null;
  chatTemplate: string | null;
  generation: Record<string, unknown>;
}

async function readTextFile(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return null;
    throw error;
  }
}

/** Checks every weight the config needs is there with its shape; an untied head may be absent only when tied. */
function checkWeights(config: LlamaConfig, weights: WeightMap, source: string): WeightMap {
  const out: WeightMap = new Map();
  for (const { name, shape } of llamaWeightShapes(config)) {
    const values = weights.get(name);
    const count = shape.reduce((a, b) => a * b, 1);
    if (!values)
      throw new InvalidArgumentError({
        argument: `${source}: ${name}`,
        message: `the weight is missing (the config needs [${shape.join(', ')}])`,
      });
    if (values.length !== count)
      throw new InvalidArgumentError({
        argument: `${source}: ${name}`,
        message: `holds ${values.length} values; the config's shape [${shape.join(', ')}] takes ${count}`,
      });
    for (let i = 0; i < values.length; i++)
      if (!Number.isFinite(values[i]))
        throw new InvalidArgumentError({
          argument: `${source}: ${name}`,
          message: `value ${i} is ${values[i]} (weights must be finite)`,
        });
    out.set(name, values);
  }
  return out;
}

async function readSafetensorsWeights(dir: string): Promise<WeightMap> {
  const index = await readJsonObject(join(dir, 'model.safetensors.index.json'), 'model', false);
  const files = index
    ? [...new Set(Object.values((index.weight_map ?? {}) as Record<string, string>))]
    : ['model.safetensors'];
  const weights: WeightMap = new Map();
  for (const file of files) {
    const path = join(dir, file);
    const decoded = decodeSafetensors(await readFileBytes(path, 'model'), {
      argument: 'model',
      source: path,
    });
    for (const [name, tensor] of decoded.tensors) {
      const values = float32Of(tensor);
      if (!values)
        throw new InvalidArgumentError({
          argument: `${path}: ${name}`,
          message: `dtype ${tensor.dtype} is not a float type (F32, F16, BF16)`,
        });
      weights.set(name, values);
    }
  }
  return weights;
}

/** A Hugging Face folder or a `.gguf` file. */
export async function loadLlamaModel(path: string): Promise<LoadedLlama> {
  let isFile: boolean;
  try {
    isFile = (await stat(path)).isFile();
  } catch (error) {
    throw new InvalidArgumentError({
      argument: 'model',
      message: `'${path}' does not exist (a Hugging Face folder or a .gguf file; scripts/fetch-models.sh fetches SmolLM2-135M-Instruct)`,
      cause: error,
    });
  }
  if (isFile) {
    if (!path.endsWith('.gguf'))
      throw new InvalidArgumentError({
        argument: 'model',
        message: `'${path}' is a file but not a .gguf file; give a .gguf file or a Hugging Face folder`,
      });
    const bytes = await readFile(path);
    const file = readGguf(bytes, path);
    const model = ggufLlamaModel(file, bytes, path);
    const config = parseLlamaConfig(model.config, path);
    const weights: WeightMap = new Map([...model.tensors].map(([name, t]) => [name, t.values]));
    const tokenizer = ggufTokenizerFiles(file);
    const tokenizerConfig = tokenizer.tokenizerConfig as Record<string, unknown>;
    return {
      source: path,
      config,
      weights: checkWeights(config, weights, path),
      tokenizer: { json: tokenizer.tokenizerJson as Record<string, unknown>, config: tokenizerConfig },
      chatTemplate: typeof tokenizerConfig.chat_template === 'string' ? tokenizerConfig.chat_template : null,
      generation: {},
    };
  }
  const configJson = (await readJsonObject(join(path, 'config.json'), 'model', true))!;
  const generation = (await readJsonObject(join(path, 'generation_config.json'), 'model', false)) ?? {};
  const config = parseLlamaConfig(configJson, join(path, 'config.json'), generation);
  const tokenizerJson = await readJsonObject(join(path, 'tokenizer.json'), 'model', false);
  const tokenizerConfig = (await readJsonObject(join(path, 'tokenizer_config.json'), 'model', false)) ?? {};
  const template =
    (await readTextFile(join(path, 'chat_template.jinja'))) ??
    (typeof tokenizerConfig.chat_template === 'string' ? tokenizerConfig.chat_template : null);
  return {
    source: path,
    config,
    weights: checkWeights(config, await readSafetensorsWeights(path), path),
    tokenizer: tokenizerJson ? { json: tokenizerJson, config: tokenizerConfig } : null,
    chatTemplate: template,
    generation,
  };
}

/** What `loadPeftAdapter` gives: the adapter's rank, alpha, dropout, target modules and weights. */
export interface LoadedAdapter {
  rank: number;
  alpha: number;
  dropout: number;
  targets: LoraTargetModule[];
  weights: WeightMap;
}

const PEFT_PREFIX = 'base_model.model.';

/** A peft LoRA adapter folder (adapter_config.json, adapter_model.safetensors) for `config`. */
export async function loadPeftAdapter(dir: string, config: LlamaConfig): Promise<LoadedAdapter> {
  const configPath = join(dir, 'adapter_config.json');
  const raw = (await readJsonObject(configPath, 'lora.adapter', true))!;
  const at = (field: string) => `${configPath}: ${field}`;
  if (raw.peft_type !== undefined && raw.peft_type !== 'LORA')
    throw new InvalidArgumentError({
      argument: at('peft_type'),
      message: `'${String(raw.peft_type)}' is not LORA`,
    });
  const rank = raw.r;
  const alpha = raw.lora_alpha ?? rank;
  if (!(Number.isInteger(rank) && (rank as number) > 0))
    throw new InvalidArgumentError({
      argument: at('r'),
      message: `must be a positive integer, got ${JSON.stringify(rank)}`,
    });
  if (!(typeof alpha === 'number' && alpha > 0))
    throw new InvalidArgumentError({
      argument: at('lora_alpha'),
      message: `must be a positive number, got ${JSON.stringify(alpha)}`,
    });
  for (const [field, ok] of [
    ['use_rslora', raw.use_rslora !== true],
    ['use_dora', raw.use_dora !== true],
    ['bias', raw.bias === undefined || raw.bias === 'none'],
  ] as const)
    if (!ok)
      throw new InvalidArgumentError({
        argument: at(field),
        message: `${JSON.stringify(raw[field])} is not supported (plain LoRA, bias 'none')`,
      });
  const modules = Array.isArray(raw.target_modules) ? (raw.target_modules as unknown[]) : [];
  const unknown = modules.filter((m) => !(LORA_TARGET_MODULES as readonly unknown[]).includes(m));
  if (modules.length === 0 || unknown.length > 0)
    throw new InvalidArgumentError({
      argument: at('target_modules'),
      message: `must list modules among ${LORA_TARGET_MODULES.join(', ')}; got ${JSON.stringify(raw.target_modules)}`,
    });
  const targets = modules as LoraTargetModule[];
  const path = join(dir, 'adapter_model.safetensors');
  const decoded = decodeSafetensors(await readFileBytes(path, 'lora.adapter'), {
    argument: 'lora.adapter',
    source: path,
  });
  const byName = new Map<string, Float32Array>();
  for (const [name, tensor] of decoded.tensors) {
    const values = float32Of(tensor);
    if (!values)
      throw new InvalidArgumentError({
        argument: `${path}: ${name}`,
        message: `dtype ${tensor.dtype} is not a float type`,
      });
    byName.set(name.startsWith(PEFT_PREFIX) ? name.slice(PEFT_PREFIX.length) : name, values);
  }
  const dropout = typeof raw.lora_dropout === 'number' ? raw.lora_dropout : 0;
  const weights: WeightMap = new Map();
  for (const { name, shape } of loraWeightShapes(config, {
    rank: rank as number,
    scaling: 1,
    targets,
    dropout: false,
  })) {
    const values = byName.get(name);
    const count = shape.reduce((a, b) => a * b, 1);
    if (!values || values.length !== count)
      throw new InvalidArgumentError({
        argument: `${path}: ${PEFT_PREFIX}${name}`,
        message: values ? `holds ${values.length} values, expected [${shape.join(', ')}]` : 'is missing',
      });
    weights.set(name, values);
  }
  return { rank: rank as number, alpha: alpha as number, dropout, targets, weights };
}
