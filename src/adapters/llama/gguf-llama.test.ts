import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SMOLLM2_GGUF } from '../../../test/support/smollm2';
import { llamaWeightShapes, parseLlamaConfig } from '../engines/llama/config';
import { type GgufFile, readGguf } from './gguf';
import { dequantizeGgufTensor } from './gguf-dequantize';
import { ggufLlamaModel } from './gguf-llama';
import { f32Bytes, refusal, T, type TensorSpec, writeGguf } from './__fixtures__/gguf-writer';

describe('ggufLlamaModel', () => {
  // A one-layer model: hidden 8, 2 query heads and 1 key-value head of 4, feed-forward 16, vocab 10.
  const [hidden, heads, kvHeads, headDim, ffn, vocab] = [8, 2, 1, 4, 16, 10];
  const ramp = (n: number, start: number) => Array.from({ length: n }, (_, i) => start + i);

  // llama.cpp's forward permutation (convert_hf_to_gguf.py LlamaModel.permute), written out
  // independently: reshape(n_head, 2, rows / n_head / 2, cols).swapaxes(1, 2).
  function llamaCppPermute(values: number[], rows: number, n: number): number[] {
    const cols = values.length / rows;
    const half = rows / n / 2;
    const out = new Array<number>(values.length);
    for (let h = 0; h < n; h++)
      for (let j = 0; j < 2; j++)
        for (let d = 0; d < half; d++)
          for (let c = 0; c < cols; c++)
            out[(h * half * 2 + d * 2 + j) * cols + c] = values[(h * 2 * half + j * half + d) * cols + c]!;
    return out;
  }

  function tinyModel(
    architecture: string,
    options: { permute: boolean; output?: boolean; bias?: boolean; extra?: TensorSpec[] },
  ) {
    const q = ramp(heads * headDim * hidden, 0);
    const k = ramp(kvHeads * headDim * hidden, 1000);
    const qb = ramp(heads * headDim, 2000);
    const t = (name: string, dims: number[], values: number[]): TensorSpec => ({
      name,
      type: 0,
      dims,
      data: f32Bytes(values),
    });
    const tensors: TensorSpec[] = [
      t('token_embd.weight', [hidden, vocab], ramp(hidden * vocab, 0)),
      t('blk.0.attn_norm.weight', [hidden], ramp(hidden, 1)),
      t(
        'blk.0.attn_q.weight',
        [hidden, heads * headDim],
        options.permute ? llamaCppPermute(q, heads * headDim, heads) : q,
      ),
      t(
        'blk.0.attn_k.weight',
        [hidden, kvHeads * headDim],
        options.permute ? llamaCppPermute(k, kvHeads * headDim, kvHeads) : k,
      ),
      t('blk.0.attn_v.weight', [hidden, kvHeads * headDim], ramp(kvHeads * headDim * hidden, 3000)),
      t('blk.0.attn_output.weight', [heads * headDim, hidden], ramp(hidden * heads * headDim, 4000)),
      t('blk.0.ffn_norm.weight', [hidden], ramp(hidden, 5000)),
      t('blk.0.ffn_gate.weight', [hidden, ffn], ramp(hidden * ffn, 6000)),
      t('blk.0.ffn_up.weight', [hidden, ffn], ramp(hidden * ffn, 7000)),
      t('blk.0.ffn_down.weight', [ffn, hidden], ramp(hidden * ffn, 8000)),
      t('output_norm.weight', [hidden], ramp(hidden, 9000)),
      ...(options.output ? [t('output.weight', [hidden, vocab], ramp(hidden * vocab, 10000))] : []),
      ...(options.bias
        ? [
            t(
              'blk.0.attn_q.bias',
              [heads * headDim],
              options.permute ? llamaCppPermute(qb, heads * headDim, heads) : qb,
            ),
            t('blk.0.attn_k.bias', [kvHeads * headDim], ramp(kvHeads * headDim, 2100)),
            t('blk.0.attn_v.bias', [kvHeads * headDim], ramp(kvHeads * headDim, 2200)),
          ]
        : []),
      ...(options.extra ?? []),
    ];
    const u32 = (value: number) => ({ type: T.u32, value });
    const bytes = writeGguf({
      metadata: {
        'general.architecture': { type: T.str, value: architecture },
        [`${architecture}.block_count`]: u32(1),
        [`${architecture}.context_length`]: u32(512),
        [`${architecture}.embedding_length`]: u32(hidden),
        [`${architecture}.feed_forward_length`]: u32(ffn),
        [`${architecture}.attention.head_count`]: u32(heads),
        [`${architecture}.attention.head_count_kv`]: u32(kvHeads),
        [`${architecture}.rope.freq_base`]: { type: T.f32, value: 1e6 },
        [`${architecture}.attention.layer_norm_rms_epsilon`]: { type: T.f32, value: 1e-6 },
        'tokenizer.ggml.bos_token_id': u32(1),
        'tokenizer.ggml.eos_token_id': u32(2),
      },
      tensors,
    });
    return { bytes, file: readGguf(bytes, 'tiny.gguf'), q, k, qb };
  }

  it("maps llama.cpp's names to transformers' and undoes the q/k permutation exactly", () => {
    const { bytes, file, q, k, qb } = tinyModel('llama', { permute: true, bias: true });
    const model = ggufLlamaModel(file, bytes, 'tiny.gguf');
    expect(Array.from(model.tensors.get('model.layers.0.self_attn.q_proj.weight')!.values)).toEqual(q);
    expect(Array.from(model.tensors.get('model.layers.0.self_attn.k_proj.weight')!.values)).toEqual(k);
    expect(Array.from(model.tensors.get('model.layers.0.self_attn.q_proj.bias')!.values)).toEqual(qb);
    expect(model.tensors.get('model.layers.0.self_attn.q_proj.weight')!.shape).toEqual([
      heads * headDim,
      hidden,
    ]);
    expect(model.tensors.get('model.layers.0.mlp.down_proj.weight')!.shape).toEqual([hidden, ffn]);
    expect([...model.tensors.keys()].sort()).toEqual(
      [
        'model.embed_tokens.weight',
        'model.layers.0.input_layernorm.weight',
        'model.layers.0.self_attn.q_proj.weight',
        'model.layers.0.self_attn.k_proj.weight',
        'model.layers.0.self_attn.v_proj.weight',
        'model.layers.0.self_attn.o_proj.weight',
        'model.layers.0.self_attn.q_proj.bias',
        'model.layers.0.self_attn.k_proj.bias',
        'model.layers.0.self_attn.v_proj.bias',
        'model.layers.0.post_attention_layernorm.weight',
        'model.layers.0.mlp.gate_proj.weight',
        'model.layers.0.mlp.up_proj.weight',
        'model.layers.0.mlp.down_proj.weight',
        'model.norm.weight',
      ].sort(),
    );
    expect(model.config).toMatchObject({
      model_type: 'llama',
      vocab_size: vocab,
      hidden_size: hidden,
      intermediate_size: ffn,
      num_hidden_layers: 1,
      num_attention_heads: heads,
      num_key_value_heads: kvHeads,
      head_dim: headDim,
      rms_norm_eps: 1e-6,
      rope_theta: 1e6,
      max_position_embeddings: 512,
      tie_word_embeddings: true,
      bos_token_id: 1,
      eos_token_id: 2,
      attention_bias: true,
    });
  });

  it('keeps Qwen2 rows as they are (its converter does not permute) and sets attention_bias', () => {
    const { bytes, file, q, k } = tinyModel('qwen2', { permute: false, bias: true, output: true });
    const model = ggufLlamaModel(file, bytes, 'tiny.gguf');
    expect(Array.from(model.tensors.get('model.layers.0.self_attn.q_proj.weight')!.values)).toEqual(q);
    expect(Array.from(model.tensors.get('model.layers.0.self_attn.k_proj.weight')!.values)).toEqual(k);
    expect(model.config).toMatchObject({
      model_type: 'qwen2',
      attention_bias: true,
      tie_word_embeddings: false,
    });
    expect(model.tensors.get('lm_head.weight')!.shape).toEqual([vocab, hidden]);
    const config = parseLlamaConfig(model.config, 'tiny.gguf');
    expect(llamaWeightShapes(config).map((w) => [w.name, w.shape])).toEqual(
      llamaWeightShapes(config).map((w) => [w.name, model.tensors.get(w.name)?.shape]),
    );
  });

  it('maps Qwen3 q/k norms', () => {
    const norm = (name: string): TensorSpec => ({
      name,
      type: 0,
      dims: [headDim],
      data: f32Bytes(ramp(headDim, 1)),
    });
    const { bytes, file } = tinyModel('qwen3', {
      permute: false,
      extra: [norm('blk.0.attn_q_norm.weight'), norm('blk.0.attn_k_norm.weight')],
    });
    const model = ggufLlamaModel(file, bytes, 'tiny.gguf');
    expect(model.tensors.get('model.layers.0.self_attn.q_norm.weight')!.shape).toEqual([headDim]);
    expect(model.tensors.has('model.layers.0.self_attn.k_norm.weight')).toBe(true);
    expect(model.config.attention_bias).toBe(false);
  });

  it('refuses an architecture it does not know, naming general.architecture', () => {
    const { bytes, file } = tinyModel('gpt2', { permute: false });
    const error = refusal(() => ggufLlamaModel(file, bytes, 'tiny.gguf'));
    expect(error.argument).toBe('tiny.gguf: general.architecture');
    expect(error.message).toContain("'gpt2'");
  });

  it('refuses a tensor it cannot place rather than dropping it', () => {
    const extra = { name: 'blk.0.ffn_gate_exps.weight', type: 0, dims: [1], data: f32Bytes([0]) };
    const { bytes, file } = tinyModel('llama', { permute: true, extra: [extra] });
    expect(refusal(() => ggufLlamaModel(file, bytes, 'tiny.gguf')).argument).toBe(
      "tiny.gguf: tensor 'blk.0.ffn_gate_exps.weight'",
    );
  });
});

// --- The real SmolLM2-135M-Instruct (scripts/fetch-models.sh), against reference values. ---

const hasSmolLM2 = existsSync(SMOLLM2_GGUF);
const reference = JSON.parse(
  readFileSync(new URL('./__fixtures__/smollm2-q4_1.json', import.meta.url), 'utf8'),
) as {
  version: number;
  tensorCount: number;
  dataOffset: number;
  config: Record<string, unknown>;
  ggufTensors: Record<
    string,
    { typeName: string; dims: number[]; offset: number; byteLength: number } & Described
  >;
  hfTensors: Record<string, { shape: number[] } & Described>;
};
interface Described {
  samples: Array<[number, number]>;
  sum: number;
  sha256: string;
}

function expectDescribed(values: Float32Array, expected: Described) {
  for (const [index, value] of expected.samples) expect(values[index]).toBe(value);
  let sum = 0;
  for (const v of values) sum += v;
  expect(sum).toBeCloseTo(expected.sum, 6);
  expect(
    createHash('sha256')
      .update(new Uint8Array(values.buffer, values.byteOffset, values.byteLength))
      .digest('hex'),
  ).toBe(expected.sha256);
}

describe.skipIf(!hasSmolLM2)(
  `SmolLM2-135M-Instruct Q4_1 (${SMOLLM2_GGUF}; run scripts/fetch-models.sh to get it)`,
  () => {
    const load = (() => {
      let cached: { bytes: Uint8Array; file: GgufFile } | undefined;
      return () => {
        if (cached === undefined) {
          const bytes = readFileSync(SMOLLM2_GGUF);
          cached = { bytes, file: readGguf(bytes, SMOLLM2_GGUF) };
        }
        return cached;
      };
    })();

    it('reads the header, metadata and tensor table', () => {
      const { file } = load();
      expect(file.version).toBe(reference.version);
      expect(file.tensors.size).toBe(reference.tensorCount);
      expect(file.dataOffset).toBe(reference.dataOffset);
      expect(file.metadata.get('general.architecture')).toBe('llama');
      expect((file.metadata.get('tokenizer.ggml.tokens') as string[]).length).toBe(49152);
      expect((file.metadata.get('tokenizer.ggml.merges') as string[]).length).toBe(48900);
      const types = new Map<string, number>();
      for (const t of file.tensors.values()) types.set(t.typeName, (types.get(t.typeName) ?? 0) + 1);
      expect(Object.fromEntries(types)).toEqual({ Q4_1: 210, F32: 61, Q8_0: 1 });
    });

    it("dequantises exactly as gguf-py's gguf.quants.dequantize", () => {
      const { bytes, file } = load();
      for (const [name, expected] of Object.entries(reference.ggufTensors)) {
        const info = file.tensors.get(name)!;
        expect({
          typeName: info.typeName,
          dims: info.dims,
          offset: info.offset,
          byteLength: info.byteLength,
        }).toEqual({
          typeName: expected.typeName,
          dims: expected.dims,
          offset: expected.offset,
          byteLength: expected.byteLength,
        });
        expectDescribed(dequantizeGgufTensor(file, bytes, name), expected);
      }
    });

    it("gives transformers' config and weights (q/k un-permuted) as its GGUF loader does", () => {
      const { bytes, file } = load();
      const model = ggufLlamaModel(file, bytes, SMOLLM2_GGUF);
      expect(model.config).toMatchObject(reference.config);
      expect(model.tensors.has('lm_head.weight')).toBe(false);
      for (const [name, expected] of Object.entries(reference.hfTensors)) {
        const tensor = model.tensors.get(name)!;
        expect(tensor.shape).toEqual(expected.shape);
        expectDescribed(tensor.values, expected);
      }
      const config = parseLlamaConfig(model.config, SMOLLM2_GGUF);
      const shapes = llamaWeightShapes(config);
      expect(shapes.length).toBe(model.tensors.size);
      for (const { name, shape } of shapes) expect(model.tensors.get(name)?.shape).toEqual(shape);
    });
  },
);
