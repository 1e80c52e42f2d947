import { describe, expect, it } from 'vitest';
import { ModelLayoutError } from '../../core/errors';
import { checkCausalLmLayout, type GraphValue } from './layout';

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
