import { InvalidArgumentError } from '../../../core/errors';

// The Llama family's config.json as the engine needs it: Llama (SmolLM2, Llama 2/3), Mistral (no
// sliding window here), Qwen2 (biases on q, k, v) and Qwen3 (RMSNorm on each head's queries and
// keys). Field names and defaults are transformers' (models/llama/configuration_llama.py and the
// Qwen2/Qwen3 ones); anything the engine cannot run is refused by name, not ignored.

/** The `model_type`s the Llama engine runs. */
export const LLAMA_MODEL_TYPES = ['llama', 'mistral', 'qwen2', 'qwen3'] as const;
/** One of LLAMA_MODEL_TYPES. */
export type LlamaModelType = (typeof LLAMA_MODEL_TYPES)[number];

/** Rotary scaling the engine computes: none, 'linear' (positions divided), or Llama 3's. */
export type RopeScaling =
  | { type: 'default' }
  | { type: 'linear'; factor: number }
  | {
      type: 'llama3';
      factor: number;
      lowFreqFactor: number;
      highFreqFactor: number;
      originalMaxPositionEmbeddings: number;
    };

/** A model's architecture as the engine reads it from `config.json` or GGUF metadata. */
export interface LlamaConfig {
  modelType: LlamaModelType;
  vocabSize: number;
  hiddenSize: number;
  intermediateSize: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling;
  maxPositions: number;
  tieEmbeddings: boolean;
  /** Biases on the q, k, v projections (Qwen2's default; `attention_bias` in Llama's config). */
  attentionBias: boolean;
  /** Biases on o_proj too (Llama's `attention_bias` covers it; Qwen2's does not). */
  outputBias: boolean;
  /** RMSNorm over each head's queries and keys before the rotation (Qwen3). */
  qkNorm: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
}

function field(config: Record<string, unknown>, name: string): unknown {
  return config[name];
}

/**
 * Builds a reader of one numeric field: `name` (or `fallback`) must pass `ok`,
 * else a typed error naming the field says it must be `what`.
 */
function requirement(ok: (value: unknown) => boolean, what: string) {
  return (config: Record<string, unknown>, source: string, name: string, fallback?: number): number => {
    const value = field(config, name) ?? fallback;
    if (!ok(value))
      throw new InvalidArgumentError({
        argument: `${source}: ${name}`,
        message: `must be ${what}, got ${JSON.stringify(value)}`,
      });
    return value as number;
  };
}

const positiveInteger = requirement((v) => Number.isInteger(v) && (v as number) > 0, 'a positive integer');

const positiveNumber = requirement(
  (v) => typeof v === 'number' && Number.isFinite(v) && v > 0,
  'a positive number',
);

function tokenIds(value: unknown, source: string, name: string): number[] {
  if (value === undefined || value === null) return [];
  const list = Array.isArray(value) ? value : [value];
  if (!list.every((v) => Number.isInteger(v) && v >= 0))
    throw new InvalidArgumentError({
      argument: `${source}: ${name}`,
      message: `must be a token id or a list of them, got ${JSON.stringify(value)}`,
    });
  return list as number[];
}

function readRopeScaling(config: Record<string, unknown>, source: string): RopeScaling {
  // transformers 5 writes the rotary settings as `rope_parameters` (rope_type, factor, ..., rope_theta); earlier versions as `rope_scaling`.
  const raw = (config.rope_scaling ?? config.rope_parameters ?? null) as Record<string, unknown> | null;
  if (raw === null) return { type: 'default' };
  const at = `${source}: ${config.rope_scaling ? 'rope_scaling' : 'rope_parameters'}`;
  if (typeof raw !== 'object')
    throw new InvalidArgumentError({
      argument: at,
      message: 'must be an object or null',
    });
  const type = raw.rope_type ?? raw.type ?? 'default';
  if (type === 'default') return { type: 'default' };
  if (type === 'linear') return { type: 'linear', factor: positiveNumber(raw, at, 'factor') };
  if (type === 'llama3')
    return {
      type: 'llama3',
      factor: positiveNumber(raw, at, 'factor'),
      lowFreqFactor: positiveNumber(raw, at, 'low_freq_factor'),
      highFreqFactor: positiveNumber(raw, at, 'high_freq_factor'),
      originalMaxPositionEmbeddings: positiveInteger(raw, at, 'original_max_position_embeddings'),
    };
  throw new InvalidArgumentError({
    argument: `${at}.rope_type`,
    message: `'${String(type)}' is not supported (supported: default, linear, llama3)`,
  });
}

/** Reads a Hugging Face config.json object of the Llama family; `source` names it in errors. */
export function parseLlamaConfig(
  config: Record<string, unknown>,
  source: string,
  generation: Record<string, unknown> = {},
): LlamaConfig {
  const modelType = config.model_type;
  if (!(LLAMA_MODEL_TYPES as readonly unknown[]).includes(modelType))
    throw new InvalidArgumentError({
      argument: `${source}: model_type`,
      message: `'${String(modelType)}' is not a Llama-family model this engine runs (supported: ${LLAMA_MODEL_TYPES.join(', ')})`,
    });
  const type = modelType as LlamaModelType;
  const hiddenSize = positiveInteger(config, source, 'hidden_size');
  const heads = positiveInteger(config, source, 'num_attention_heads');
  const kvHeads = positiveInteger(config, source, 'num_key_value_heads', heads);
  if (heads % kvHeads !== 0)
    throw new InvalidArgumentError({
      argument: `${source}: num_key_value_heads`,
      message: `${kvHeads} does not divide num_attention_heads (${heads})`,
    });
  const headDim = positiveInteger(config, source, 'head_dim', hiddenSize / heads);
  if (headDim % 2 !== 0)
    throw new InvalidArgumentError({
      argument: `${source}: head_dim`,
      message: `must be even, got ${headDim}`,
    });
  if (
    config.sliding_window !== undefined &&
    config.sliding_window !== null &&
    config.use_sliding_window === true
  )
    throw new InvalidArgumentError({
      argument: `${source}: use_sliding_window`,
      message: 'sliding-window attention is not supported; set it to false',
    });
  const partial = config.partial_rotary_factor;
  if (partial !== undefined && partial !== 1)
    throw new InvalidArgumentError({
      argument: `${source}: partial_rotary_factor`,
      message: `only 1 is supported, got ${JSON.stringify(partial)}`,
    });
  const act = config.hidden_act ?? 'silu';
  if (act !== 'silu')
    throw new InvalidArgumentError({
      argument: `${source}: hidden_act`,
      message: `only 'silu' is supported, got ${JSON.stringify(act)}`,
    });
  const attentionBias = type === 'qwen2' ? true : config.attention_bias === true;
  const eos = tokenIds(generation.eos_token_id ?? config.eos_token_id, source, 'eos_token_id');
  const bos = tokenIds(config.bos_token_id, source, 'bos_token_id');
  return {
    modelType: type,
    vocabSize: positiveInteger(config, source, 'vocab_size'),
    hiddenSize,
    intermediateSize: positiveInteger(config, source, 'intermediate_size'),
    layers: positiveInteger(config, source, 'num_hidden_layers'),
    heads,
    kvHeads,
    headDim,
    rmsNormEps: positiveNumber(config, source, 'rms_norm_eps', 1e-6),
    ropeTheta: positiveNumber(
      config,
      source,
      'rope_theta',
      (config.rope_parameters as { rope_theta?: number } | undefined)?.rope_theta ?? 10000,
    ),
    ropeScaling: readRopeScaling(config, source),
    maxPositions: positiveInteger(config, source, 'max_position_embeddings', 2048),
    // transformers' default for the whole family is untied.
    tieEmbeddings: config.tie_word_embeddings === true,
    attentionBias,
    outputBias: type !== 'qwen2' && type !== 'qwen3' && config.attention_bias === true,
    qkNorm: type === 'qwen3',
    bosTokenId: bos[0] ?? null,
    eosTokenIds: eos,
  };
}

/** The weights' Hugging Face names and shapes, embedding first; `lm_head.weight` only when untied. */
export function llamaWeightShapes(config: LlamaConfig): Array<{ name: string; shape: number[] }> {
  const { vocabSize: V, hiddenSize: d, intermediateSize: m, heads, kvHeads, headDim: hd } = config;
  const out = [{ name: 'model.embed_tokens.weight', shape: [V, d] }];
  for (let l = 0; l < config.layers; l++) {
    const p = `model.layers.${l}`;
    out.push(
      { name: `${p}.input_layernorm.weight`, shape: [d] },
      { name: `${p}.self_attn.q_proj.weight`, shape: [heads * hd, d] },
      { name: `${p}.self_attn.k_proj.weight`, shape: [kvHeads * hd, d] },
      { name: `${p}.self_attn.v_proj.weight`, shape: [kvHeads * hd, d] },
    );
    if (config.attentionBias)
      out.push(
        { name: `${p}.self_attn.q_proj.bias`, shape: [heads * hd] },
        { name: `${p}.self_attn.k_proj.bias`, shape: [kvHeads * hd] },
        { name: `${p}.self_attn.v_proj.bias`, shape: [kvHeads * hd] },
      );
    if (config.qkNorm)
      out.push(
        { name: `${p}.self_attn.q_norm.weight`, shape: [hd] },
        { name: `${p}.self_attn.k_norm.weight`, shape: [hd] },
      );
    out.push({ name: `${p}.self_attn.o_proj.weight`, shape: [d, heads * hd] });
    if (config.outputBias) out.push({ name: `${p}.self_attn.o_proj.bias`, shape: [d] });
    out.push(
      { name: `${p}.post_attention_layernorm.weight`, shape: [d] },
      { name: `${p}.mlp.gate_proj.weight`, shape: [m, d] },
      { name: `${p}.mlp.up_proj.weight`, shape: [m, d] },
      { name: `${p}.mlp.down_proj.weight`, shape: [d, m] },
    );
  }
  out.push({ name: 'model.norm.weight', shape: [d] });
  if (!config.tieEmbeddings) out.push({ name: 'lm_head.weight', shape: [V, d] });
  return out;
}

/** The config as a Hugging Face config.json object (what `transformers` loads). */
export function llamaConfigJson(config: LlamaConfig): Record<string, unknown> {
  const architecture = {
    llama: 'LlamaForCausalLM',
    mistral: 'MistralForCausalLM',
    qwen2: 'Qwen2ForCausalLM',
    qwen3: 'Qwen3ForCausalLM',
  }[config.modelType];
  const scaling = config.ropeScaling;
  // transformers 5 reads `rope_parameters`, earlier versions `rope_scaling`: both are written.
  const scaled =
    scaling.type === 'default'
      ? null
      : scaling.type === 'linear'
        ? { rope_type: 'linear', factor: scaling.factor }
        : {
            rope_type: 'llama3',
            factor: scaling.factor,
            low_freq_factor: scaling.lowFreqFactor,
            high_freq_factor: scaling.highFreqFactor,
            original_max_position_embeddings: scaling.originalMaxPositionEmbeddings,
          };
  return {
    architectures: [architecture],
    model_type: config.modelType,
    vocab_size: config.vocabSize,
    hidden_size: config.hiddenSize,
    intermediate_size: config.intermediateSize,
    num_hidden_layers: config.layers,
    num_attention_heads: config.heads,
    num_key_value_heads: config.kvHeads,
    head_dim: config.headDim,
    hidden_act: 'silu',
    rms_norm_eps: config.rmsNormEps,
    rope_theta: config.ropeTheta,
    rope_parameters: { rope_theta: config.ropeTheta, ...(scaled ?? { rope_type: 'default' }) },
    rope_scaling: scaled,
    max_position_embeddings: config.maxPositions,
    tie_word_embeddings: config.tieEmbeddings,
    ...(config.modelType === 'llama' || config.modelType === 'mistral'
      ? { attention_bias: config.attentionBias, mlp_bias: false }
      : {}),
    ...(config.bosTokenId !== null && { bos_token_id: config.bosTokenId }),
    ...(config.eosTokenIds.length > 0 && {
      eos_token_id: config.eosTokenIds.length === 1 ? config.eosTokenIds[0] : config.eosTokenIds,
    }),
    torch_dtype: 'float32',
  };
}

/**
 * cos and sin of each position's rotation, [positions, headDim] (the halves repeated, as
 * transformers' `cat((freqs, freqs))`), rounded as its float32 computation rounds them.
 */
export function rotaryTables(
  config: LlamaConfig,
  positions: ArrayLike<number>,
): { cos: Float32Array; sin: Float32Array } {
  const half = config.headDim / 2;
  const f = Math.fround;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) {
    inv[i] = f(1 / f(config.ropeTheta ** f((2 * i) / config.headDim)));
  }
  const scaling = config.ropeScaling;
  if (scaling.type === 'linear') for (let i = 0; i < half; i++) inv[i] = f(inv[i]! / scaling.factor);
  if (scaling.type === 'llama3') {
    // transformers' _compute_llama3_parameters.
    const lowWavelen = scaling.originalMaxPositionEmbeddings / scaling.lowFreqFactor;
    const highWavelen = scaling.originalMaxPositionEmbeddings / scaling.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const wavelen = (2 * Math.PI) / inv[i]!;
      if (wavelen > lowWavelen) inv[i] = f(inv[i]! / scaling.factor);
      else if (wavelen >= highWavelen) {
        const smooth =
          (scaling.originalMaxPositionEmbeddings / wavelen - scaling.lowFreqFactor) /
          (scaling.highFreqFactor - scaling.lowFreqFactor);
        inv[i] = f((1 - smooth) * (inv[i]! / scaling.factor) + smooth * inv[i]!);
      }
    }
  }
  const n = positions.length;
  const cos = new Float32Array(n * config.headDim);
  const sin = new Float32Array(n * config.headDim);
  for (let p = 0; p < n; p++) {
    for (let i = 0; i < half; i++) {
      const angle = f(positions[p]! * inv[i]!);
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[p * config.headDim + i] = c;
      cos[p * config.headDim + half + i] = c;
      sin[p * config.headDim + i] = s;
      sin[p * config.headDim + half + i] = s;
    }
  }
  return { cos, sin };
}
