import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../core/errors';
import type { LogProbBatch, PolicyCheckpoint } from '../../ports/policy-backend';
import { useTinyPolicies, withTensorValue } from './__fixtures__/tiny-policy';

const tiny = useTinyPolicies();
const settings = { model: { layers: 1, width: 8, heads: 2, contextLength: 16 }, seed: 3 };
const batch: LogProbBatch = { inputIds: [[3, 70, 101, 12]], positions: [[1, 2, 3]] };

const withValue = (
  checkpoint: PolicyCheckpoint,
  blob: string,
  tensor: string,
  index: number,
  value: number,
) => ({
  ...checkpoint,
  blobs: { ...checkpoint.blobs, [blob]: withTensorValue(checkpoint.blobs[blob]!, tensor, index, value) },
});

describe('tfjs policy checkpoints', () => {
  it('refuses NaN, ±Infinity and negative second moments, naming the blob and parameter; the policy stays as it was', async () => {
    const policy = await tiny(settings);
    const saved = await policy.save();
    const other = await tiny({ ...settings, seed: 4 });
    const before = await other.logProbs(batch);
    for (const [blob, tensor, index, value, what] of [
      [
        'model.safetensors',
        'transformer.wte.weight',
        0,
        Number.NaN,
        /NaN at parameter 'tokenEmbedding', element 0 \(tensor 'transformer.wte.weight'\)/,
      ],
      [
        'model.safetensors',
        'transformer.wpe.weight',
        1,
        Number.POSITIVE_INFINITY,
        /Infinity at parameter 'positionEmbedding', element 1/,
      ],
      [
        'optimizer.safetensors',
        'exp_avg.transformer.h.0.attn.c_attn.weight',
        2,
        Number.NEGATIVE_INFINITY,
        /-Infinity at parameter 'blocks.0.attention.qkv', element 2/,
      ],
      ['optimizer.safetensors', 'exp_avg_sq.transformer.ln_f.bias', 5, Number.NaN, /NaN.*finalNorm.bias/],
      ['optimizer.safetensors', 'exp_avg_sq.transformer.h.0.mlp.c_fc.bias', 5, -1, /negative/],
    ] as const) {
      const error = await other.load(withValue(saved, blob, tensor, index, value)).catch((e: unknown) => e);
      expect(InvalidArgumentError.isInstance(error), String(error)).toBe(true);
      expect((error as InvalidArgumentError).argument).toBe(`checkpoint.blobs['${blob}']`);
      expect((error as Error).message).toMatch(what);
    }
    expect(await other.logProbs(batch)).toEqual(before);
    // Where the checkpoint came from a file, the error names it.
    const error = await other
      .load({
        ...withValue(saved, 'model.safetensors', 'transformer.wte.weight', 0, Number.NaN),
        source: {
          state: '/runs/x/state.json',
          blobs: { 'model.safetensors': '/runs/x/policy/model.safetensors' },
        },
      })
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('/runs/x/policy/model.safetensors');
    await other.load(saved);
    expect(await other.logProbs(batch)).toEqual(await policy.logProbs(batch));
  });

  it('refuses a checkpoint whose byte order is not little-endian float32', async () => {
    const policy = await tiny(settings);
    const saved = await policy.save();
    await expect(
      policy.load({ ...saved, metadata: { ...saved.metadata, byteOrder: 'big-endian float16' } }),
    ).rejects.toThrow(/checkpoint\.metadata\.byteOrder/);
  });
});
