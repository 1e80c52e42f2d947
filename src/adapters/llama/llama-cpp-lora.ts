import { InvalidArgumentError } from '../../core/errors';

// A peft LoRA adapter as the GGUF adapter file llama.cpp applies at run time (`--lora`, node-llama-
// cpp's `lora.adapters`), written as llama.cpp's convert_lora_to_gguf.py writes one: metadata
// general.type 'adapter', adapter.type 'lora', adapter.lora.alpha; for each adapted weight
// `<gguf name>.lora_a` (rank x in) and `.lora_b` (out x rank) in float32, named after the base
// model's GGUF tensors. llama.cpp scales the product by alpha / rank, as peft does.

const MAGIC = 0x46554747; // "GGUF" as a little-endian u32
const VERSION = 3;
const ALIGNMENT = 32;
const GGUF_TYPE = { uint32: 4, float32: 6, string: 8 } as const;
const GGML_F32 = 0;

/** transformers' module names and the GGUF tensor each adapts (convert_hf_to_gguf.py's tensor map). */
const GGUF_MODULES: Readonly<Record<string, string>> = {
  'self_attn.q_proj': 'attn_q',
  'self_attn.k_proj': 'attn_k',
  'self_attn.v_proj': 'attn_v',
  'self_attn.o_proj': 'attn_output',
  'mlp.gate_proj': 'ffn_gate',
  'mlp.up_proj': 'ffn_up',
  'mlp.down_proj': 'ffn_down',
};

/** What the GGUF adapter needs of the model and the adapter. */
export interface LoraForLlamaCpp {
  /** The base model's GGUF architecture (`general.architecture`: 'llama', 'qwen2', 'qwen3'). */
  architecture: string;
  heads: number;
  kvHeads: number;
  alpha: number;
  /**
   * The adapter's weights under peft's names without the `base_model.model.` prefix
   * (`model.layers.0.self_attn.q_proj.lora_A.weight`: rank x in; `lora_B`: out x rank), with their
   * row counts.
   */
  weights: ReadonlyMap<string, { values: Float32Array; rows: number }>;
}

/**
 * convert_hf_to_gguf.py permutes Llama's q and k rows from transformers' rotary halves into
 * interleaved pairs (LlamaModel.permute); an adapter's B matrices of q_proj and k_proj are permuted
 * the same way, since they write those rows. Qwen2 and Qwen3 are converted without it.
 */
function permuteRows(values: Float32Array, rows: number, heads: number, at: string): Float32Array {
  if (rows % (2 * heads) !== 0)
    throw new InvalidArgumentError({
      argument: at,
      message: `${rows} rows do not split into ${heads} heads of pairs`,
    });
  const columns = values.length / rows;
  const half = rows / heads / 2;
  const out = new Float32Array(values.length);
  for (let h = 0; h < heads; h++)
    for (let d = 0; d < half; d++)
      for (let j = 0; j < 2; j++) {
        const to = (h * half * 2 + d * 2 + j) * columns;
        const from = (h * half * 2 + j * half + d) * columns;
        out.set(values.subarray(from, from + columns), to);
      }
  return out;
}

/** The GGUF bytes of a LoRA adapter for llama.cpp. */
export function llamaCppLoraGguf(adapter: LoraForLlamaCpp): Uint8Array {
  const tensors: Array<{ name: string; dims: [number, number]; values: Float32Array }> = [];
  const pattern =
    /^model\.layers\.(\d+)\.(self_attn\.[qkvo]_proj|mlp\.(?:gate|up|down)_proj)\.lora_([AB])\.weight$/;
  for (const [name, { values, rows }] of adapter.weights) {
    const match = pattern.exec(name);
    if (!match)
      throw new InvalidArgumentError({
        argument: `adapter.weights['${name}']`,
        message: 'is not a LoRA weight of an attention or MLP projection',
      });
    const [, layer, module, which] = match;
    const columns = values.length / rows;
    if (!Number.isInteger(columns))
      throw new InvalidArgumentError({
        argument: `adapter.weights['${name}']`,
        message: `${values.length} values are not ${rows} rows`,
      });
    const permuted =
      which === 'B' &&
      adapter.architecture === 'llama' &&
      (module === 'self_attn.q_proj' || module === 'self_attn.k_proj')
        ? permuteRows(values, rows, module === 'self_attn.q_proj' ? adapter.heads : adapter.kvHeads, name)
        : values;
    // GGUF dims are fastest-varying first: a rows x columns matrix is [columns, rows].
    tensors.push({
      name: `blk.${layer}.${GGUF_MODULES[module!]}.weight.lora_${which!.toLowerCase()}`,
      dims: [columns, rows],
      values: permuted,
    });
  }
  const encoder = new TextEncoder();
  const chunks: Uint8Array[] = [];
  let length = 0;
  const push = (bytes: Uint8Array) => {
    chunks.push(bytes);
    length += bytes.length;
  };
  const u32 = (value: number) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setUint32(0, value, true);
    push(b);
  };
  const u64 = (value: number) => {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt(value), true);
    push(b);
  };
  const f32 = (value: number) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    push(b);
  };
  const string = (text: string) => {
    const bytes = encoder.encode(text);
    u64(bytes.length);
    push(bytes);
  };
  const metadata: Array<[string, 'string' | 'float32' | 'uint32', string | number]> = [
    ['general.architecture', 'string', adapter.architecture],
    ['general.type', 'string', 'adapter'],
    ['general.alignment', 'uint32', ALIGNMENT],
    ['adapter.type', 'string', 'lora'],
    ['adapter.lora.alpha', 'float32', adapter.alpha],
  ];
  u32(MAGIC);
  u32(VERSION);
  u64(tensors.length);
  u64(metadata.length);
  for (const [key, type, value] of metadata) {
    string(key);
    u32(GGUF_TYPE[type]);
    if (type === 'string') string(value as string);
    else if (type === 'float32') f32(value as number);
    else u32(value as number);
  }
  const padded = (n: number) => Math.ceil(n / ALIGNMENT) * ALIGNMENT;
  let offset = 0;
  for (const tensor of tensors) {
    string(tensor.name);
    u32(tensor.dims.length);
    for (const d of tensor.dims) u64(d);
    u32(GGML_F32);
    u64(offset);
    offset = padded(offset + tensor.values.byteLength);
  }
  push(new Uint8Array(padded(length) - length));
  for (const tensor of tensors) {
    const bytes = new Uint8Array(tensor.values.buffer, tensor.values.byteOffset, tensor.values.byteLength);
    push(bytes.slice());
    push(new Uint8Array(padded(bytes.length) - bytes.length));
  }
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
