import { describe, expect, it } from 'vitest';
import { MissingDependencyError } from '../../core/errors';
import { createRandom } from '../../core/random';
import { loadPointerSelector } from './load-pointer-selector';
import { createPointerSelector } from './pointer-selector';
import { selectorBatch } from './pointer-training';

const D = 6;
const K = 5;
function item(seed: number) {
  const random = createRandom(seed);
  return {
    queryId: seed,
    queryEmbedding: Float32Array.from({ length: D }, () => random.nextNormal()),
    candidateEmbeddings: Float32Array.from({ length: K * D }, () => random.nextNormal()),
    poolIndices: [10, 11, 12, 13, 14],
    beamLabels: [[0, 1]],
  };
}

describe('createPointerSelector', () => {
  it('selects distinct shots from the pool, with log-probs equal to the teacher-forced ones', async () => {
    const selector = await createPointerSelector({
      inputDimensions: D,
      hiddenDimensions: 4,
      shots: 3,
      backend: 'cpu',
    });
    const batch = selectorBatch([item(1), item(2)]);
    const sampled = selector.select(batch, createRandom(5));
    for (const a of sampled.actions) expect(new Set(a).size).toBe(3);
    const forced = selector.logProbs(batch, sampled.actions);
    forced.flat().forEach((lp, i) => expect(lp).toBeCloseTo(sampled.logProbs.flat()[i]!, 4));
    const greedy = selector.select(batch).actions;
    expect(selector.select(batch).actions).toEqual(greedy);
    selector.dispose();
  });

  it('a training step raises the log-prob of the rewarded choice; save/load restores weights and moments exactly', async () => {
    const selector = await createPointerSelector({
      inputDimensions: D,
      hiddenDimensions: 4,
      backend: 'cpu',
      learningRate: 0.05,
    });
    const batch = selectorBatch([item(3)]);
    const before = selector.logProbs(batch, [[2, 4]])[0]!.reduce((a, b) => a + b, 0);
    for (let i = 0; i < 5; i++) selector.step(batch, [[2, 4]], [[-1, -1]]);
    const after = selector.logProbs(batch, [[2, 4]])[0]!.reduce((a, b) => a + b, 0);
    expect(after).toBeGreaterThan(before);
    const saved = selector.save();
    const other = await createPointerSelector({
      inputDimensions: D,
      hiddenDimensions: 4,
      backend: 'cpu',
      seed: 99,
      learningRate: 0.05,
    });
    other.load(saved);
    expect(other.logProbs(batch, [[2, 4]])).toEqual(selector.logProbs(batch, [[2, 4]]));
    selector.step(batch, [[2, 4]], [[-1, -1]]);
    other.step(batch, [[2, 4]], [[-1, -1]]);
    expect(other.logProbs(batch, [[2, 4]])).toEqual(selector.logProbs(batch, [[2, 4]]));
    expect(() => selector.logProbs(batch, [[2, 2]])).toThrow(/distinct local indices/);
    selector.dispose();
    other.dispose();
  });

  it('searcher-rl/icd: without @tensorflow/tfjs, the selector is a MissingDependencyError that says what to install; with it, the subpath makes one', async () => {
    const missing = async () => {
      throw Object.assign(
        new Error("Cannot find package '@tensorflow/tfjs' imported from /app/pointer-selector.js"),
        { code: 'ERR_MODULE_NOT_FOUND' },
      );
    };
    const error = await loadPointerSelector(missing).catch((e: unknown) => e);
    expect(MissingDependencyError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/searcher-rl\/icd/);
    expect((error as Error).message).toMatch(/npm install @tensorflow\/tfjs/);
    const icd = await import('./index');
    const selector = await icd.createPointerSelector({
      inputDimensions: D,
      hiddenDimensions: 4,
      backend: 'cpu',
    });
    expect(selector.select(selectorBatch([item(5)])).actions[0]).toHaveLength(2);
    selector.dispose();
  });
});
