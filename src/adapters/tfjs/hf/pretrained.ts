import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { InvalidArgumentError } from '../../../core/errors';
import { firstNonFinite } from '../../../core/finite-values';
import type { Tokenizer } from '../../../ports/types';
import { readJsonObject } from '../../../provider-utils/json-file';
import { decodeSafetensors, float32Of, type SafetensorsTensor } from '../../../provider-utils/safetensors';
import type { TransformerConfig } from '../../engines/transformer/transformer';
import type { TokenizerFiles } from './checkpoint-files';
import { gpt2TensorName, transformerConfigOfGpt2 } from './gpt2';
import { createTaggedHfTokenizer } from './hf-tokenizer';

/** A GPT-2-family folder, read and checked: the model it describes, its weights by parameter, its tokenizer. */
export interface PretrainedModel {
  config: TransformerConfig;
  tokenizer: Tokenizer;
  tokenizerFiles: TokenizerFiles;
  /** Values per tfjs parameter name, in the parameter's shape (embedding rows for added tags filled in). */
  weights: Map<string, Float32Array>;
  /** What to tell the user: the tags added as tokens. */
  addedTags: string[];
}

const refuse = (message: string, cause?: unknown) =>
  new InvalidArgumentError({ argument: 'initFrom', message, ...(cause !== undefined && { cause }) });

async function readWeightsFile(dir: string): Promise<{ path: string; bytes: Uint8Array }> {
  const path = join(dir, 'model.safetensors');
  try {
    return { path, bytes: new Uint8Array(await readFile(path)) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw refuse(
      code === 'ENOENT'
        ? `${path} is missing: the folder needs its weights as one model.safetensors (a pytorch_model.bin or sharded folder: load it in transformers and save_pretrained(dir, max_shard_size="10GB"))`
        : `cannot read ${path}: ${(error as Error).message}`,
      error,
    );
  }
}

/**
 * Reads a Hugging Face GPT-2-family folder (`config.json`, `model.safetensors`, `tokenizer.json`,
 * optional `tokenizer_config.json`): GPT-2 and DistilGPT-2 as published (tensor names `h.0...`,
 * `wte.weight`) and as `save_pretrained` writes them (`transformer.h.0...`), float32, float16 or
 * bfloat16. Every refusal names the file and field or tensor.
 */
export async function readPretrainedFolder(dir: string): Promise<PretrainedModel> {
  const configPath = join(dir, 'config.json');
  const rawConfig = (await readJsonObject(configPath, 'initFrom', true))!;
  const config = transformerConfigOfGpt2(rawConfig, configPath);
  const tokenizerJson = await readJsonObject(join(dir, 'tokenizer.json'), 'initFrom', true);
  const tokenizerConfig = (await readJsonObject(join(dir, 'tokenizer_config.json'), 'initFrom', false)) ?? {};
  const eosFromConfig = Array.isArray(rawConfig.eos_token_id)
    ? rawConfig.eos_token_id[0]
    : rawConfig.eos_token_id;
  const setup = await createTaggedHfTokenizer(tokenizerJson!, tokenizerConfig, {
    modelVocabSize: config.vocabSize,
    ...(Number.isInteger(eosFromConfig) && { eosTokenId: eosFromConfig as number }),
    source: dir,
  });
  if (setup.originalSize > config.vocabSize)
    throw refuse(
      `${join(dir, 'tokenizer.json')} has ${setup.originalSize} tokens, more than the model's vocab_size ${config.vocabSize} (${configPath})`,
    );
  const model: TransformerConfig = { ...config, vocabSize: setup.tokenizer.vocabSize };
  const { path, bytes } = await readWeightsFile(dir);
  const { tensors } = decodeSafetensors(bytes, { argument: 'initFrom', source: path });
  const find = (name: string): [string, SafetensorsTensor] | undefined => {
    for (const candidate of [name, name.replace(/^transformer\./, '')]) {
      const tensor = tensors.get(candidate);
      if (tensor) return [candidate, tensor];
    }
    return undefined;
  };
  const weights = new Map<string, Float32Array>();
  const load = (parameter: string, shape: number[]) => {
    const wanted = gpt2TensorName(parameter);
    const found = find(wanted);
    if (!found)
      throw refuse(`${path} has no tensor '${wanted}' (nor '${wanted.replace(/^transformer\./, '')}')`);
    const [name, tensor] = found;
    if (tensor.shape.join(',') !== shape.join(','))
      throw refuse(
        `${path}: tensor '${name}' has shape [${tensor.shape.join(', ')}], config.json implies [${shape.join(', ')}]`,
      );
    const values = float32Of(tensor);
    if (!values) throw refuse(`${path}: tensor '${name}' is ${tensor.dtype}, not floating point`);
    const bad = firstNonFinite(values);
    if (bad)
      throw refuse(
        `${path}: tensor '${name}' holds ${bad.value} at element ${bad.index}: weights must be finite`,
      );
    weights.set(parameter, values);
  };
  const { width: d, mlpWidth: m, contextLength: C, vocabSize: V } = config;
  load('tokenEmbedding', [V, d]);
  load('positionEmbedding', [C, d]);
  for (let l = 0; l < config.layers; l++) {
    const block = (name: string, shape: number[]) => load(`blocks.${l}.${name}`, shape);
    block('norm1.gain', [d]);
    block('norm1.bias', [d]);
    block('attention.qkv', [d, 3 * d]);
    block('attention.qkvBias', [3 * d]);
    block('attention.out', [d, d]);
    block('attention.outBias', [d]);
    block('norm2.gain', [d]);
    block('norm2.bias', [d]);
    block('mlp.up', [d, m]);
    block('mlp.upBias', [m]);
    block('mlp.down', [m, d]);
    block('mlp.downBias', [d]);
  }
  load('finalNorm.gain', [d]);
  load('finalNorm.bias', [d]);
  weights.set(
    'tokenEmbedding',
    withTagRows(weights.get('tokenEmbedding')!, V, model.vocabSize, d, setup.addedTags),
  );
  return {
    config: model,
    tokenizer: setup.tokenizer,
    tokenizerFiles: setup.files,
    weights,
    addedTags: setup.addedTags.map((t) => t.tag),
  };
}

/**
 * The token embedding grown to the new vocabulary: each added tag's row is the mean of the rows
 * of the pieces the original tokenizer split it into (so the model starts out reading `<search>`
 * roughly as it read its pieces; a common initialisation for added tokens), other new rows zero.
 */
function withTagRows(
  table: Float32Array,
  rows: number,
  newRows: number,
  width: number,
  tags: ReadonlyArray<{ id: number; pieces: number[] }>,
): Float32Array {
  if (newRows === rows && tags.length === 0) return table;
  const out = new Float32Array(newRows * width);
  out.set(table.subarray(0, rows * width));
  for (const { id, pieces } of tags) {
    const row = out.subarray(id * width, (id + 1) * width);
    row.fill(0);
    const used = pieces.filter((p) => p < rows);
    for (const p of used) for (let k = 0; k < width; k++) row[k]! += table[p * width + k]! / used.length;
  }
  return out;
}
