import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../core/errors';
import type { LogProbBatch, PolicyCheckpoint } from '../../ports/policy-backend';
import { useTinyPolicies } from './__fixtures__/tiny-policy';

const tiny = useTinyPolicies();
const settings = { model: { layers: 1, width: 8, heads: 2, contextLength: 16 }, seed: 3 };
const batch: LogProbBatch = { inputIds: [[3, 70, 101, 12]], positions: [[1, 2, 3]] };

const withValue = (checkpoint: PolicyCheckpoint, blob: string, index: number, value: number) => {
  const bytes = checkpoint.blobs[blob]!.slice();
  new DataView(bytes.buffer).setFloat32(index * 4, value, true);
  return { ...checkpoint, blobs: { ...checkpoint.blobs, [blob]: bytes } };
};

describe('tfjs policy checkpoints', () => {
  it('refuses NaN, ±Infinity and negative second moments, naming the blob and parameter; the policy stays as it was', async () => {
    const policy = await tiny(settings);
    const saved = await policy.save();
    const other = await tiny({ ...settings, seed: 4 });
    const before = await other.logProbs(batch);
    const parameters = saved.metadata.parameters as Array<{ name: string; shape: number[] }>;
    const firstSize = parameters[0]!.shape.reduce((a, b) => a * b, 1);
    for (const [blob, index, value, what] of [
      ['weights.f32', 0, Number.NaN, /NaN.*parameter 'tokenEmbedding', element 0/],
      [
        'weights.f32',
        firstSize + 1,
        Number.POSITIVE_INFINITY,
        new RegExp(`Infinity.*parameter '${parameters[1]!.name}', element 1`),
      ],
      ['adam-m.f32', 2, Number.NEGATIVE_INFINITY, /-Infinity/],
      ['adam-v.f32', 5, Number.NaN, /NaN/],
      ['adam-v.f32', 5, -1, /negative/],
    ] as const) {
      const error = await other.load(withValue(saved, blob, index, value)).catch((e: unknown) => e);
      expect(InvalidArgumentError.isInstance(error), String(error)).toBe(true);
      expect((error as InvalidArgumentError).argument).toBe(`checkpoint.blobs['${blob}']`);
      expect((error as Error).message).toMatch(what);
    }
    expect(await other.logProbs(batch)).toEqual(before);
    // Where the checkpoint came from a file, the error names it.
    const error = await other
      .load({
        ...withValue(saved, 'weights.f32', 0, Number.NaN),
        source: { state: '/runs/x/state.json', blobs: { 'weights.f32': '/runs/x/policy/weights.f32' } },
      })
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('/runs/x/policy/weights.f32');
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
