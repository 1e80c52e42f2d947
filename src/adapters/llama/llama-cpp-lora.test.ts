import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../core/errors';
import { readGguf } from './gguf';
import { llamaCppLoraGguf } from './llama-cpp-lora';

const f32 = (...values: number[]) => Float32Array.from(values);

describe('llamaCppLoraGguf', () => {
  const weights = new Map([
    // rank 1, in 2, out 4 (one head of 4 rows: q's rows are permuted into interleaved pairs)
    ['model.layers.0.self_attn.q_proj.lora_A.weight', { values: f32(1, 2), rows: 1 }],
    ['model.layers.0.self_attn.q_proj.lora_B.weight', { values: f32(10, 11, 12, 13), rows: 4 }],
    ['model.layers.3.mlp.down_proj.lora_B.weight', { values: f32(5, 6, 7, 8), rows: 2 }],
  ]);

  it('writes a GGUF adapter that the project’s reader opens: metadata, llama.cpp names, dims and float32 values', () => {
    const bytes = llamaCppLoraGguf({ architecture: 'llama', heads: 1, kvHeads: 1, alpha: 16, weights });
    const file = readGguf(bytes, 'adapter.gguf');
    expect(file.version).toBe(3);
    expect(file.metadata.get('general.type')).toBe('adapter');
    expect(file.metadata.get('adapter.type')).toBe('lora');
    expect(file.metadata.get('adapter.lora.alpha')).toBe(16);
    expect(file.metadata.get('general.architecture')).toBe('llama');
    const values = (name: string) => {
      const info = file.tensors.get(name)!;
      expect(info.typeName).toBe('F32');
      return {
        dims: info.dims,
        values: [...new Float32Array(bytes.slice(info.offset, info.offset + info.byteLength).buffer)],
      };
    };
    expect(values('blk.0.attn_q.weight.lora_a')).toEqual({ dims: [2, 1], values: [1, 2] });
    // transformers' halves [10, 11 | 12, 13] become llama.cpp's pairs (10, 12), (11, 13).
    expect(values('blk.0.attn_q.weight.lora_b')).toEqual({ dims: [1, 4], values: [10, 12, 11, 13] });
    expect(values('blk.3.ffn_down.weight.lora_b')).toEqual({ dims: [2, 2], values: [5, 6, 7, 8] });
    for (const info of file.tensors.values()) expect(info.offset % 32).toBe(0);
  });

  it('leaves Qwen2 rows in place (converted without the permutation)', () => {
    const file = llamaCppLoraGguf({ architecture: 'qwen2', heads: 1, kvHeads: 1, alpha: 8, weights });
    const info = readGguf(file, 'adapter.gguf').tensors.get('blk.0.attn_q.weight.lora_b')!;
    expect([...new Float32Array(file.slice(info.offset, info.offset + info.byteLength).buffer)]).toEqual([
      10, 11, 12, 13,
    ]);
  });

  it('refuses a weight that is not a LoRA matrix of a projection, naming it', () => {
    const bad = new Map([['model.embed_tokens.lora_A.weight', { values: f32(1), rows: 1 }]]);
    let caught: unknown;
    try {
      llamaCppLoraGguf({ architecture: 'llama', heads: 1, kvHeads: 1, alpha: 1, weights: bad });
    } catch (error) {
      caught = error;
    }
    expect(InvalidArgumentError.isInstance(caught)).toBe(true);
    expect((caught as InvalidArgumentError).argument).toBe(
      "adapter.weights['model.embed_tokens.lora_A.weight']",
    );
  });
});
