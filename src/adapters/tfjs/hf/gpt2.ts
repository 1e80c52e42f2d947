import { InvalidArgumentError } from '../../../core/errors';
import { TURN_STOP_TAGS } from '../../../core/protocol/tags';
import type { Tokenizer } from '../../../ports/types';
import { LN_EPS, type TransformerConfig } from '../../engines/transformer/transformer';

/**
 * The Hugging Face GPT-2 layout of the tfjs transformer (transformers' GPT2LMHeadModel): the same
 * model (pre-norm blocks, learned positions, tied embedding, GELU tanh, layer norm eps 1e-5), so
 * the weights map one to one. GPT-2's Conv1D stores its weight as [in, out], as `linear` here does;
 * c_attn's output is q, k, v side by side, each split into heads of width n_embd / n_head, and the
 * scores are scaled by 1/sqrt(head width) (GPT2Attention: split(n_embd, dim=2), view(..., heads,
 * head_dim), scaling head_dim**-0.5), as in Transformer.block.
 */

const BLOCK_NAMES: Record<string, string> = {
  'norm1.gain': 'ln_1.weight',
  'norm1.bias': 'ln_1.bias',
  'attention.qkv': 'attn.c_attn.weight',
  'attention.qkvBias': 'attn.c_attn.bias',
  'attention.out': 'attn.c_proj.weight',
  'attention.outBias': 'attn.c_proj.bias',
  'norm2.gain': 'ln_2.weight',
  'norm2.bias': 'ln_2.bias',
  'mlp.up': 'mlp.c_fc.weight',
  'mlp.upBias': 'mlp.c_fc.bias',
  'mlp.down': 'mlp.c_proj.weight',
  'mlp.downBias': 'mlp.c_proj.bias',
};

/** A parameter's name in GPT2LMHeadModel's state dict (`transformer.h.0.attn.c_attn.weight`). */
export function gpt2TensorName(parameter: string): string {
  if (parameter === 'tokenEmbedding') return 'transformer.wte.weight';
  if (parameter === 'positionEmbedding') return 'transformer.wpe.weight';
  if (parameter === 'finalNorm.gain') return 'transformer.ln_f.weight';
  if (parameter === 'finalNorm.bias') return 'transformer.ln_f.bias';
  const match = /^blocks\.(\d+)\.(.+)$/.exec(parameter);
  const name = match && BLOCK_NAMES[match[2]!];
  if (!match || !name) throw new Error(`gpt2TensorName: no GPT-2 name for parameter '${parameter}'`);
  return `transformer.h.${match[1]}.${name}`;
}

/**
 * `config.json` of the model: what `AutoConfig` / `AutoModelForCausalLM` read. No dropout (the
 * policy trains without it), end-of-sequence (and beginning, as GPT-2) the tokenizer's.
 */
export function gpt2ConfigJson(model: TransformerConfig, tokenizer: Tokenizer): Record<string, unknown> {
  return {
    architectures: ['GPT2LMHeadModel'],
    model_type: 'gpt2',
    vocab_size: model.vocabSize,
    n_positions: model.contextLength,
    n_embd: model.width,
    n_layer: model.layers,
    n_head: model.heads,
    n_inner: model.mlpWidth,
    activation_function: 'gelu_new',
    layer_norm_epsilon: LN_EPS,
    resid_pdrop: 0,
    embd_pdrop: 0,
    attn_pdrop: 0,
    initializer_range: 0.02,
    scale_attn_weights: true,
    scale_attn_by_inverse_layer_idx: false,
    reorder_and_upcast_attn: false,
    tie_word_embeddings: true,
    use_cache: true,
    bos_token_id: tokenizer.eosTokenId,
    eos_token_id: tokenizer.eosTokenId,
    dtype: 'float32',
  };
}

/**
 * `generation_config.json`: a turn ends after a closing action tag (the episode stops decoding
 * there), so `generate` stops on those too, and on end-of-sequence.
 */
export function gpt2GenerationConfigJson(tokenizer: Tokenizer): Record<string, unknown> {
  const stops = TURN_STOP_TAGS.map((t) => tokenizer.specialTokenId(t)).filter(
    (id): id is number => id !== undefined,
  );
  return {
    bos_token_id: tokenizer.eosTokenId,
    eos_token_id: [tokenizer.eosTokenId, ...stops],
    pad_token_id: tokenizer.eosTokenId,
  };
}

/** Activations that are GELU's tanh approximation (the one this model computes). */
const TANH_GELU = ['gelu_new', 'gelu_pytorch_tanh', 'gelu_fast'];

/**
 * The tfjs model of a GPT-2-family `config.json` (GPT-2, DistilGPT-2, one written here), refusing
 * what this model does not compute (another activation or layer-norm epsilon, untied embeddings,
 * scaled-by-layer attention), each with the field named.
 */
export function transformerConfigOfGpt2(config: unknown, source: string): TransformerConfig {
  const refuse = (field: string, message: string) =>
    new InvalidArgumentError({ argument: `initFrom`, message: `${source}: ${field} ${message}` });
  if (typeof config !== 'object' || config === null) throw refuse('config.json', 'is not a JSON object');
  const c = config as Record<string, unknown>;
  if (c.model_type !== 'gpt2')
    throw refuse(
      'model_type',
      `is ${JSON.stringify(c.model_type)}: only the GPT-2 family (model_type "gpt2": GPT-2, DistilGPT-2) loads into the tfjs policy`,
    );
  const int = (field: string) => {
    const value = c[field];
    if (!(Number.isSafeInteger(value) && (value as number) > 0))
      throw refuse(field, `must be a positive integer, got ${JSON.stringify(value)}`);
    return value as number;
  };
  const width = int('n_embd');
  const heads = int('n_head');
  if (width % heads !== 0) throw refuse('n_embd', `(${width}) must be divisible by n_head (${heads})`);
  const activation = c.activation_function ?? 'gelu_new';
  if (!TANH_GELU.includes(activation as string))
    throw refuse(
      'activation_function',
      `is ${JSON.stringify(activation)}: the tfjs model computes GELU's tanh approximation (${TANH_GELU.join(', ')})`,
    );
  const epsilon = c.layer_norm_epsilon ?? 1e-5;
  if (epsilon !== LN_EPS)
    throw refuse('layer_norm_epsilon', `is ${String(epsilon)}: the tfjs model uses ${LN_EPS}`);
  if (c.tie_word_embeddings === false)
    throw refuse(
      'tie_word_embeddings',
      'is false: the tfjs model ties its output layer to the token embedding',
    );
  if (c.scale_attn_weights === false || c.scale_attn_by_inverse_layer_idx === true)
    throw refuse(
      'scale_attn_weights',
      'or scale_attn_by_inverse_layer_idx differ from GPT-2 (scores scaled by 1/sqrt(head width) only)',
    );
  if (c.add_cross_attention === true)
    throw refuse('add_cross_attention', 'is true: a decoder-only model is needed');
  const inner = c.n_inner;
  if (inner !== undefined && inner !== null && !(Number.isSafeInteger(inner) && (inner as number) > 0))
    throw refuse('n_inner', `must be a positive integer or null, got ${JSON.stringify(inner)}`);
  return {
    vocabSize: int('vocab_size'),
    contextLength: int('n_positions'),
    layers: int('n_layer'),
    width,
    heads,
    mlpWidth: (inner as number | null | undefined) ?? 4 * width,
  };
}
