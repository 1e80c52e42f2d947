import { describe, expect, it } from 'vitest';
import { ModelLayoutError } from '../../core/errors';
import { checkCausalLmLayout, readCausalLmConfig, type GraphValue } from './layout';

const ids = (name: string): GraphValue => ({
  name,
  isTensor: true,
  type: 'int64',
  shape: ['batch_size', 'sequence_length'],
});
const cache = (name: string, type = 'float32'): GraphValue => ({
  name,
  isTensor: true,
  type,
  shape: ['batch_size', 2, 'past_sequence_length', 16],
});
const inputs = (): GraphValue[] => [
  ids('input_ids'),
  ids('attention_mask'),
  ids('position_ids'),
  ...[0, 1].flatMap((l) => [cache(`past_key_values.${l}.key`), cache(`past_key_values.${l}.value`)]),
];
const outputs = (): GraphValue[] => [
  { name: 'logits', isTensor: true, type: 'float32', shape: ['batch_size', 'sequence_length', 297] },
  ...[0, 1].flatMap((l) => [cache(`present.${l}.key`), cache(`present.${l}.value`)]),
];

function mismatches(ins: GraphValue[], outs: GraphValue[]): readonly string[] {
  try {
    checkCausalLmLayout('model.onnx', ins, outs);
  } catch (error) {
    expect(ModelLayoutError.isInstance(error)).toBe(true);
    expect((error as Error).message).toContain('--task text-generation-with-past');
    return (error as ModelLayoutError).mismatches;
  }
  return [];
}

describe('the Optimum causal-LM layout check', () => {
  it('reads the layers, heads, head width and vocabulary of a graph in the layout', () => {
    expect(checkCausalLmLayout('model.onnx', inputs(), outputs())).toEqual({
      layers: 2,
      heads: 2,
      headWidth: 16,
      vocabSize: 297,
      hasPositionIds: true,
    });
    expect(
      checkCausalLmLayout(
        'model.onnx',
        inputs().filter((v) => v.name !== 'position_ids'),
        outputs(),
      ).hasPositionIds,
    ).toBe(false);
  });

  it('names a renamed input, both as missing and as unexpected', () => {
    const renamed = inputs().map((v) => (v.name === 'input_ids' ? { ...v, name: 'ids' } : v));
    expect(mismatches(renamed, outputs())).toEqual(["missing input 'input_ids'", "unexpected input 'ids'"]);
  });

  it('names every wrong rank, element type and missing cache tensor at once', () => {
    const ins = inputs()
      .filter((v) => v.name !== 'past_key_values.1.value')
      .map((v) =>
        v.name === 'attention_mask'
          ? { ...v, type: 'int32' }
          : v.name === 'past_key_values.0.key'
            ? cache(v.name, 'float16')
            : v,
      );
    const outs = outputs().map((v) => (v.name === 'logits' ? { ...v, shape: ['batch_size', 297] } : v));
    expect(mismatches([...ins, ids('use_cache_branch')], outs)).toEqual([
      "input 'attention_mask' has element type int32, expected int64",
      "output 'logits' has rank 2, expected 3",
      "input 'past_key_values.0.key' has element type float16, expected float32 (float16 exports are not supported yet: export in float32)",
      "missing input 'past_key_values.1.value'",
      "unexpected input 'use_cache_branch' (a merged decoder: export model.onnx with past, not decoder_model_merged.onnx)",
    ]);
  });

  it('refuses a graph without a key/value cache', () => {
    expect(mismatches([ids('input_ids'), ids('attention_mask')], [outputs()[0]!])).toEqual([
      "no 'past_key_values.{i}.key/value' inputs (export the model with its key/value cache: --task text-generation-with-past)",
    ]);
  });
});

describe("config.json of Optimum's exports", () => {
  const graph = (heads?: number) => ({ layers: 2, hasPositionIds: false, ...(heads && { heads }) });
  const eos = { eos_token_id: [2] };

  it('reads the key/value heads under each family name; the graph wins and a disagreement is named', () => {
    // Fields as transformers 4.57 writes them for each family.
    const falconMultiQuery = {
      num_attention_heads: 2,
      num_kv_heads: 2,
      multi_query: true,
      new_decoder_architecture: false,
      hidden_size: 32,
      vocab_size: 397,
      max_position_embeddings: 2048,
    };
    expect(readCausalLmConfig('config.json', falconMultiQuery, eos, graph(1)).heads).toBe(1);
    expect(readCausalLmConfig('config.json', falconMultiQuery, eos, graph()).heads).toBe(1);
    const falconNew = {
      ...falconMultiQuery,
      num_attention_heads: 4,
      num_kv_heads: 2,
      new_decoder_architecture: true,
    };
    expect(readCausalLmConfig('config.json', falconNew, eos, graph(2))).toMatchObject({
      heads: 2,
      headWidth: 8,
    });
    const bigCode = { n_head: 2, n_embd: 32, multi_query: true, n_positions: 128, vocab_size: 397 };
    expect(readCausalLmConfig('config.json', bigCode, eos, graph(1)).heads).toBe(1);
    const llama = {
      num_attention_heads: 4,
      num_key_value_heads: 2,
      hidden_size: 32,
      vocab_size: 397,
      max_position_embeddings: 128,
    };
    expect(readCausalLmConfig('config.json', llama, eos, graph(2))).toMatchObject({ heads: 2, headWidth: 8 });
    expect(() => readCausalLmConfig('config.json', llama, eos, graph(4))).toThrow(
      /config\.json has 2 key\/value heads, the graph 4/,
    );
  });

  it('a model with ALiBi positions names no context length: the contextLength setting gives it', () => {
    const bloom = { n_head: 2, hidden_size: 32, n_layer: 2, vocab_size: 397 };
    expect(() => readCausalLmConfig('config.json', bloom, eos, graph(2))).toThrow(/set contextLength/);
    expect(readCausalLmConfig('config.json', bloom, eos, graph(2), 512)).toMatchObject({
      contextLength: 512,
      heads: 2,
      headWidth: 16,
    });
    const mpt = { n_heads: 2, d_model: 32, max_seq_len: 128, vocab_size: 397 };
    expect(readCausalLmConfig('config.json', mpt, eos, graph())).toMatchObject({
      contextLength: 128,
      heads: 2,
      headWidth: 16,
    });
  });
});
