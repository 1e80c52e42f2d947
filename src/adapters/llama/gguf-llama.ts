import { InvalidArgumentError } from '../../core/errors';
import type { GgufFile } from './gguf';
import { dequantizeGgufTensor } from './gguf-dequantize';

/** A model's weights under their Hugging Face names, with the config.json they imply. */
export interface GgufLlamaModel {
  config: Record<string, unknown>;
  tensors: Map<string, { shape: number[]; values: Float32Array }>;
}

const GGUF_LLAMA_ARCHITECTURES = ['llama', 'qwen2', 'qwen3'] as const;

// llama.cpp's tensor names (gguf-py constants.py TENSOR_NAMES) to transformers' for one block.
const BLOCK_TENSOR_NAMES: Record<string, string> = {
  attn_norm: 'input_layernorm',
  ffn_norm: 'post_attention_layernorm',
  attn_q: 'self_attn.q_proj',
  attn_k: 'self_attn.k_proj',
  attn_v: 'self_attn.v_proj',
  attn_output: 'self_attn.o_proj',
  attn_q_norm: 'self_attn.q_norm',
  attn_k_norm: 'self_attn.k_norm',
  ffn_gate: 'mlp.gate_proj',
  ffn_up: 'mlp.up_proj',
  ffn_down: 'mlp.down_proj',
};
const TOP_TENSOR_NAMES: Record<string, string> = {
  token_embd: 'model.embed_tokens',
  output_norm: 'model.norm',
  output: 'lm_head',
};

function huggingFaceTensorName(name: string): string | undefined {
  const block = /^blk\.(\d+)\.([a-z_]+)\.(weight|bias)$/.exec(name);
  if (block !== null) {
    const inner = BLOCK_TENSOR_NAMES[block[2]!];
    return inner === undefined ? undefined : `model.layers.${block[1]}.${inner}.${block[3]}`;
  }
  const top = /^([a-z_]+)\.(weight|bias)$/.exec(name);
  const mapped = top === null ? undefined : TOP_TENSOR_NAMES[top[1]!];
  return mapped === undefined ? undefined : `${mapped}.${top![2]}`;
}

/**
 * The shortest decimal that is the same float32: GGUF stores `rms_norm_eps` and `rope_theta` as
 * float32, so 1e-5 arrives as 9.999999747378752e-06; the config gets back the 1e-5 that
 * config.json had (float32 arithmetic on either gives the same bits).
 */
function shortestFloat32(value: number): number {
  for (let digits = 1; digits <= 9; digits++) {
    const candidate = Number(value.toPrecision(digits));
    if (Math.fround(candidate) === value) return candidate;
  }
  return value;
}

/**
 * Undoes llama.cpp's rotary permutation of a Llama q or k projection (weight rows or bias).
 * convert_hf_to_gguf.py's `LlamaModel.permute` turns each head's rows from the two halves
 * transformers rotates into interleaved pairs; transformers' `_reverse_permute_weights`
 * (modeling_gguf_pytorch_utils.py) reshapes to (heads, dim, 2, ...) and swaps back to
 * (heads, 2, dim, ...). `heads` is num_key_value_heads for k.
 */
function reversePermute(values: Float32Array, rows: number, heads: number, at: string): Float32Array {
  const columns = values.length / rows;
  if (rows % (2 * heads) !== 0)
    throw new InvalidArgumentError({
      argument: at,
      message: `${rows} rows do not split into ${heads} heads of pairs`,
    });
  const half = rows / heads / 2;
  const out = new Float32Array(values.length);
  for (let h = 0; h < heads; h++)
    for (let d = 0; d < half; d++)
      for (let j = 0; j < 2; j++) {
        const from = (h * half * 2 + d * 2 + j) * columns;
        const to = (h * half * 2 + j * half + d) * columns;
        out.set(values.subarray(from, from + columns), to);
      }
  return out;
}

/**
 * A Llama-family model (Llama, SmolLM2, Qwen2, Qwen3 as llama.cpp writes them) as a Hugging Face
 * config.json object and float32 weights under transformers' names, Llama's q and k rows put back
 * in transformers' rotary order. `source` names the file in errors.
 */
export function ggufLlamaModel(file: GgufFile, bytes: Uint8Array, source: string): GgufLlamaModel {
  const meta = file.metadata;
  function fail(field: string, message: string): never {
    throw new InvalidArgumentError({ argument: `${source}: ${field}`, message });
  }
  const architecture = meta.get('general.architecture');
  if (!(GGUF_LLAMA_ARCHITECTURES as readonly unknown[]).includes(architecture))
    fail(
      'general.architecture',
      `'${String(architecture)}' is not an architecture this engine runs from GGUF (supported: ${GGUF_LLAMA_ARCHITECTURES.join(', ')})`,
    );
  const arch = architecture as (typeof GGUF_LLAMA_ARCHITECTURES)[number];
  const integer = (key: string, fallback?: number): number => {
    const value = meta.get(`${arch}.${key}`) ?? fallback;
    if (!(typeof value === 'number' && Number.isInteger(value) && value > 0))
      fail(
        `${arch}.${key}`,
        `must be a positive integer, got ${value === undefined ? 'nothing' : String(value)}`,
      );
    return value as number;
  };
  const float = (key: string, fallback: number): number => {
    const value = meta.get(`${arch}.${key}`) ?? fallback;
    if (!(typeof value === 'number' && Number.isFinite(value) && value > 0))
      fail(`${arch}.${key}`, `must be a positive number, got ${String(value)}`);
    return shortestFloat32(value as number);
  };
  const tokenId = (key: string): number | null => {
    const value = meta.get(`tokenizer.ggml.${key}`);
    return typeof value === 'number' ? value : null;
  };

  const embedding = file.tensors.get('token_embd.weight');
  if (embedding === undefined || embedding.dims.length !== 2)
    fail('token_embd.weight', 'the file has no 2-D token embedding');
  const hiddenSize = integer('embedding_length');
  const heads = integer('attention.head_count');
  const kvHeads = integer('attention.head_count_kv', heads);
  // llama.cpp writes attention.key_length only when head_dim is not hidden / heads (Qwen3), and a
  // Llama's rope.dimension_count is its head_dim (partial rotation is not a Llama thing).
  const headDim =
    arch === 'llama' && meta.has('llama.rope.dimension_count') && !meta.has('llama.attention.key_length')
      ? integer('rope.dimension_count')
      : integer('attention.key_length', hiddenSize / heads);

  const scalingType = meta.get(`${arch}.rope.scaling.type`);
  let ropeScaling: Record<string, unknown> | null = null;
  if (scalingType === 'linear')
    ropeScaling = { rope_type: 'linear', factor: float('rope.scaling.factor', 1) };
  else if (scalingType !== undefined && scalingType !== 'none')
    fail(
      `${arch}.rope.scaling.type`,
      `'${String(scalingType)}' rotary scaling is not supported (supported: none, linear)`,
    );
  // Llama 3.1's scaling is baked into per-frequency factors; the engine computes its own.
  if (file.tensors.has('rope_freqs.weight'))
    fail(
      'rope_freqs.weight',
      "per-frequency rotary factors (Llama 3.1's scaling) are not supported from GGUF",
    );

  const vocabSize = embedding!.dims[1]!;
  const config: Record<string, unknown> = {
    model_type: arch,
    vocab_size: vocabSize,
    hidden_size: hiddenSize,
    intermediate_size: integer('feed_forward_length'),
    num_hidden_layers: integer('block_count'),
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    head_dim: headDim,
    rms_norm_eps: float('attention.layer_norm_rms_epsilon', 1e-6),
    rope_theta: float('rope.freq_base', 10000),
    rope_scaling: ropeScaling,
    max_position_embeddings: integer('context_length', 2048),
    tie_word_embeddings: !file.tensors.has('output.weight'),
    bos_token_id: tokenId('bos_token_id'),
    eos_token_id: tokenId('eos_token_id'),
    attention_bias: arch === 'qwen2' ? true : file.tensors.has('blk.0.attn_q.bias'),
    hidden_act: 'silu',
  };

  // Every name is placed before anything is dequantised, so a foreign tensor fails fast.
  const names = new Map<string, string>();
  for (const name of file.tensors.keys()) {
    const hfName = huggingFaceTensorName(name);
    if (hfName === undefined)
      fail(
        `tensor '${name}'`,
        'is not a tensor of a Llama-family model this loader knows; the file may be another architecture',
      );
    names.set(name, hfName);
  }
  const tensors = new Map<string, { shape: number[]; values: Float32Array }>();
  for (const [name, hfName] of names) {
    const shape = [...file.tensors.get(name)!.dims].reverse();
    let values = dequantizeGgufTensor(file, bytes, name);
    // Qwen2 and Qwen3 are converted without the permutation (their converters set no undo_permute).
    if (arch === 'llama' && /\.attn_[qk]\.(weight|bias)$/.test(name))
      values = reversePermute(
        values,
        shape[0]!,
        name.includes('.attn_q.') ? heads : kvHeads,
        `${source}: tensor '${name}'`,
      );
    tensors.set(hfName, { shape, values });
  }
  return { config, tensors };
}
