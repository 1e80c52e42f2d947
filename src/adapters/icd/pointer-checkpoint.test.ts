import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../core/errors';
import { createRandom } from '../../core/random';
import type { PolicyCheckpoint } from '../../ports/policy-backend';
import { createPointerSelector } from './pointer-selector';
import { selectorBatch } from './pointer-training';

const D = 6;
const settings = { inputDimensions: D, hiddenDimensions: 4, backend: 'cpu' as const, learningRate: 0.05 };
const random = createRandom(1);
const batch = selectorBatch([
  {
    queryId: 1,
    queryEmbedding: Float32Array.from({ length: D }, () => random.nextNormal()),
    candidateEmbeddings: Float32Array.from({ length: 5 * D }, () => random.nextNormal()),
    poolIndices: [10, 11, 12, 13, 14],
    beamLabels: [[0, 1]],
  },
]);

const withValue = (checkpoint: PolicyCheckpoint, blob: string, value: number) => {
  const bytes = checkpoint.blobs[blob]!.slice();
  new DataView(bytes.buffer).setFloat32(4, value, true);
  return { ...checkpoint, blobs: { ...checkpoint.blobs, [blob]: bytes } };
};

describe('pointer selector checkpoints', () => {
  it('refuses non-finite weights and moments, naming the blob and the file, and changes nothing', async () => {
    const trained = await createPointerSelector(settings);
    for (let i = 0; i < 3; i++) trained.step(batch, [[2, 4]], [[-1, -1]]);
    const saved = trained.save();
    const other = await createPointerSelector({ ...settings, seed: 9 });
    const before = other.logProbs(batch, [[2, 4]]);
    for (const [blob, value] of [
      ['queryProjection.f32', Number.NaN],
      ['candidateProjection.m.f32', Number.POSITIVE_INFINITY],
      // The last blob read: a refusal here must not leave the earlier ones assigned.
      ['gate.v.f32', Number.NaN],
      ['gate.v.f32', -2],
    ] as const) {
      const error = (() => {
        try {
          other.load({
            ...withValue(saved, blob, value),
            source: { state: '/r/state.json', blobs: { [blob]: `/r/policy/${blob}` } },
          });
        } catch (e) {
          return e;
        }
      })();
      expect(InvalidArgumentError.isInstance(error), `${blob} ${value}: ${String(error)}`).toBe(true);
      expect((error as InvalidArgumentError).argument).toBe(`checkpoint.blobs.${blob}`);
      expect((error as Error).message).toContain(`/r/policy/${blob}`);
      expect(other.logProbs(batch, [[2, 4]])).toEqual(before);
    }
    for (const step of [-1, 1.5, Number.NaN, 'x']) {
      expect(() => other.load({ ...saved, metadata: { ...saved.metadata, optimizerStep: step } })).toThrow(
        /optimizerStep/,
      );
    }
    other.load(saved);
    expect(other.logProbs(batch, [[2, 4]])).toEqual(trained.logProbs(batch, [[2, 4]]));
    trained.dispose();
    other.dispose();
  });
});
