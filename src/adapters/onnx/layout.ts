import { ModelLayoutError } from '../../core/errors';

// No ONNX Runtime import here: the checks run on the graph's input/output metadata as plain data.

/** One input or output of an ONNX graph as ONNX Runtime describes it (`session.inputMetadata`). */
export interface GraphValue {
  name: string;
  isTensor?: boolean;
  /** Element type: 'float32', 'int64', 'float16', ... */
  type?: string;
  /** Fixed sizes as numbers, symbolic ones as their names. */
  shape?: ReadonlyArray<number | string>;
}

/** What the decoder needs to know about a graph that passed the checks. */
export interface CausalLmLayout {
  layers: number;
  /** Key/value heads and their width, where the graph fixes them. */
  heads?: number;
  headWidth?: number;
  /** The logits' last dimension, where the graph fixes it. */
  vocabSize?: number;
  hasPositionIds: boolean;
}

/** What a `ModelLayoutError` adds: the export the ONNX policy expects and how to make it. */
export const LAYOUT_HINT =
  "Expected Hugging Face Optimum's causal-LM export with a key/value cache (`optimum-cli export onnx --task text-generation-with-past`; optimum 2.x needs `pip install optimum-onnx` for it): inputs input_ids, attention_mask, position_ids (optional) and past_key_values.{i}.key/value; outputs logits and present.{i}.key/value; float32 key/values and logits, int64 ids.";

const PAST = /^past_key_values\.(\d+)\.(key|value)$/;
const PRESENT = /^present\.(\d+)\.(key|value)$/;

function check(
  value: GraphValue | undefined,
  label: string,
  want: { type: string; rank: number },
  out: string[],
): void {
  if (!value) return;
  if (value.isTensor === false) {
    out.push(`${label} '${value.name}' is not a tensor`);
    return;
  }
  if (value.type !== undefined && value.type !== want.type) {
    const note =
      value.type === 'float16' ? ' (float16 exports are not supported yet: export in float32)' : '';
    out.push(`${label} '${value.name}' has element type ${value.type}, expected ${want.type}${note}`);
  }
  if (value.shape !== undefined && value.shape.length !== want.rank)
    out.push(`${label} '${value.name}' has rank ${value.shape.length}, expected ${want.rank}`);
}

const fixed = (dim: number | string | undefined) => (typeof dim === 'number' && dim > 0 ? dim : undefined);

/** Layer indices in `names` matching `pattern`, with the kinds (key, value) each has. */
function layersOf(values: readonly GraphValue[], pattern: RegExp): Map<number, Map<string, GraphValue>> {
  const layers = new Map<number, Map<string, GraphValue>>();
  for (const value of values) {
    const m = pattern.exec(value.name);
    if (!m) continue;
    const layer = Number(m[1]);
    layers.set(layer, (layers.get(layer) ?? new Map()).set(m[2]!, value));
  }
  return layers;
}

/**
 * Checks a graph against Optimum's causal-LM layout and returns what decoding needs; every
 * difference is collected and reported together in one ModelLayoutError.
 */
export function checkCausalLmLayout(
  model: string,
  inputs: readonly GraphValue[],
  outputs: readonly GraphValue[],
): CausalLmLayout {
  const mismatches: string[] = [];
  const input = new Map(inputs.map((v) => [v.name, v]));
  const output = new Map(outputs.map((v) => [v.name, v]));
  for (const name of ['input_ids', 'attention_mask']) {
    if (!input.has(name)) mismatches.push(`missing input '${name}'`);
    check(input.get(name), 'input', { type: 'int64', rank: 2 }, mismatches);
  }
  check(input.get('position_ids'), 'input', { type: 'int64', rank: 2 }, mismatches);
  if (!output.has('logits')) mismatches.push("missing output 'logits'");
  check(output.get('logits'), 'output', { type: 'float32', rank: 3 }, mismatches);

  const past = layersOf(inputs, PAST);
  const present = layersOf(outputs, PRESENT);
  const layers = Math.max(past.size, present.size);
  if (past.size === 0)
    mismatches.push(
      "no 'past_key_values.{i}.key/value' inputs (export the model with its key/value cache: --task text-generation-with-past)",
    );
  for (let layer = 0; layer < layers; layer++) {
    for (const kind of ['key', 'value']) {
      const pastValue = past.get(layer)?.get(kind);
      const presentValue = present.get(layer)?.get(kind);
      if (!pastValue) mismatches.push(`missing input 'past_key_values.${layer}.${kind}'`);
      if (!presentValue) mismatches.push(`missing output 'present.${layer}.${kind}'`);
      check(pastValue, 'input', { type: 'float32', rank: 4 }, mismatches);
      check(presentValue, 'output', { type: 'float32', rank: 4 }, mismatches);
    }
  }
  for (const layer of [...past.keys(), ...present.keys()])
    if (layer >= layers) mismatches.push(`layer ${layer} is beyond the ${layers} layers the cache names`);
  for (const value of inputs) {
    if (['input_ids', 'attention_mask', 'position_ids'].includes(value.name) || PAST.test(value.name))
      continue;
    const note =
      value.name === 'use_cache_branch'
        ? ' (a merged decoder: export model.onnx with past, not decoder_model_merged.onnx)'
        : '';
    mismatches.push(`unexpected input '${value.name}'${note}`);
  }
  if (mismatches.length > 0) throw new ModelLayoutError({ model, mismatches, hint: LAYOUT_HINT });

  const firstPast = past.get(0)?.get('key')?.shape;
  const logitsShape = output.get('logits')?.shape;
  const heads = fixed(firstPast?.[1]);
  const headWidth = fixed(firstPast?.[3]);
  const vocabSize = fixed(logitsShape?.[2]);
  return {
    layers,
    hasPositionIds: input.has('position_ids'),
    ...(heads && { heads }),
    ...(headWidth && { headWidth }),
    ...(vocabSize && { vocabSize }),
  };
}

/** The fields of config.json and generation_config.json the policy reads. */
export interface CausalLmConfig {
  vocabSize: number;
  contextLength: number;
  heads: number;
  headWidth: number;
  eosTokenIds: number[];
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const ids = (v: unknown): number[] =>
  Array.isArray(v) ? v.filter((x): x is number => typeof x === 'number') : typeof v === 'number' ? [v] : [];

/**
 * The key/value heads config.json gives, under the names of the families Optimum exports:
 * num_key_value_heads (Llama, Qwen2, Gemma, Mistral, Phi-3), Falcon's num_kv_heads (its new
 * decoder architecture only: otherwise multi_query means one head, whatever num_kv_heads says),
 * multi_query (GPT-BigCode, Falcon: one head); else the attention heads.
 */
function configKeyValueHeads(config: Record<string, unknown>, attentionHeads: number | undefined) {
  if (config.new_decoder_architecture === true) return num(config.num_kv_heads) ?? attentionHeads;
  if (config.multi_query === true) return 1;
  return num(config.num_key_value_heads) ?? num(config.num_kv_heads) ?? attentionHeads;
}

/**
 * Reads the model's sizes from config.json (the names of GPT-2 and of Llama-like models) and its
 * end-of-sequence ids from generation_config.json (else config.json); what the graph fixes wins,
 * and a disagreement between the two is a mismatch. A model with relative positions only (ALiBi:
 * BLOOM, MPT, Falcon with `alibi`) may name no context length: `contextLength` (the policy's
 * setting) gives it then.
 */
export function readCausalLmConfig(
  model: string,
  config: Record<string, unknown>,
  generation: Record<string, unknown>,
  layout: CausalLmLayout,
  contextLength?: number,
): CausalLmConfig {
  const mismatches: string[] = [];
  const attentionHeads = num(config.num_attention_heads) ?? num(config.n_head) ?? num(config.n_heads);
  const width = num(config.hidden_size) ?? num(config.n_embd) ?? num(config.d_model);
  const configHeads = configKeyValueHeads(config, attentionHeads);
  const configHeadWidth =
    num(config.head_dim) ?? (width !== undefined && attentionHeads ? width / attentionHeads : undefined);
  const configVocab = num(config.vocab_size);
  const configContext =
    num(config.max_position_embeddings) ??
    num(config.n_positions) ??
    num(config.n_ctx) ??
    num(config.seq_length) ??
    num(config.max_seq_len);
  const context = configContext ?? contextLength;
  const heads = layout.heads ?? configHeads;
  const headWidth = layout.headWidth ?? configHeadWidth;
  const vocabSize = layout.vocabSize ?? configVocab;
  if (layout.heads !== undefined && configHeads !== undefined && layout.heads !== configHeads)
    mismatches.push(`config.json has ${configHeads} key/value heads, the graph ${layout.heads}`);
  if (layout.vocabSize !== undefined && configVocab !== undefined && layout.vocabSize !== configVocab)
    mismatches.push(`config.json has vocab_size ${configVocab}, the graph's logits ${layout.vocabSize}`);
  if (heads === undefined)
    mismatches.push(
      'config.json names no num_key_value_heads / num_attention_heads / n_head, and the graph does not fix them',
    );
  if (headWidth === undefined || !Number.isInteger(headWidth))
    mismatches.push(
      'config.json names no head_dim / hidden_size / n_embd, and the graph does not fix the head width',
    );
  if (vocabSize === undefined)
    mismatches.push('config.json names no vocab_size, and the graph does not fix it');
  if (context === undefined)
    mismatches.push(
      'config.json names no max_position_embeddings / n_positions (the context length); for a model without one (ALiBi: BLOOM, MPT) set contextLength',
    );
  const eosTokenIds =
    ids(generation.eos_token_id).length > 0 ? ids(generation.eos_token_id) : ids(config.eos_token_id);
  if (eosTokenIds.length === 0)
    mismatches.push('neither generation_config.json nor config.json names an eos_token_id');
  if (mismatches.length > 0)
    throw new ModelLayoutError({
      model,
      mismatches,
      hint: 'config.json and generation_config.json come with the export (optimum-cli writes them beside model.onnx).',
    });
  return {
    vocabSize: vocabSize!,
    contextLength: context!,
    heads: heads!,
    headWidth: headWidth!,
    eosTokenIds,
  };
}
