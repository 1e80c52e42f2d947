import { describe, expect, it } from 'vitest';
import { ppoClipLoss } from './__fixtures__/loss-settings';
import { trajectoryWith } from './__fixtures__/trajectories';
import { klPenalty } from './kl';
import { policyLoss } from './policy-loss';
import { buildUpdateBatch, createLossFunction } from './update-batch';

describe('buildUpdateBatch', () => {
  it('keeps mask-1 positions only, cuts after the last policy token, and leaves out missing advantages', () => {
    const batch = buildUpdateBatch([
      trajectoryWith('a#0', 12, [3, 4, 7], 0.5),
      trajectoryWith('a#1', 9, [2, 5], null),
      trajectoryWith('a#2', 10, [1, 2, 8], -0.5),
      trajectoryWith('a#3', 6, [], 1),
    ]);
    expect(batch.sampleIds).toEqual(['a#0', 'a#2']);
    expect(batch.positions).toEqual([
      [3, 4, 7],
      [1, 2, 8],
    ]);
    // Tokens after the last policy token (a forced completion, the generator's answer) are cut.
    expect(batch.inputIds.map((row) => row.length)).toEqual([8, 9]);
    expect(batch.inputIds[0]).toEqual([100, 101, 102, 103, 104, 105, 106, 107]);
    expect(batch.oldLogProbs[0]).toEqual([-0.1 * 3, -0.1 * 4, -0.1 * 7]);
    expect(batch.advantages).toEqual([0.5, -0.5]);
  });

  it('refuses a token step that does not match the ids or the mask, naming it', () => {
    const t = trajectoryWith('a#0', 6, [2, 3], 1);
    t.lossMask[3] = 0;
    expect(() => buildUpdateBatch([t])).toThrow(/trajectories\[0\]\.tokenSteps\[1\]/);
  });
});

describe('createLossFunction', () => {
  const oldLogProbs = [
    [-1, -2, -0.5],
    [-0.3, -1.2],
  ];
  const newLogProbs = [
    [-0.8, -2.4, -0.5],
    [-0.6, -1.0],
  ];
  const advantages = [1, -1];
  const mask = oldLogProbs.map((row) => row.map(() => 1));
  // What createLossFunction must equal: the PPO loss and the k3 KL, token-mean, every token in.
  const referencePolicyLoss = (options: { clipRatioC?: number; logRatioClamp?: number } = {}) =>
    policyLoss({
      kind: 'ppo_clip',
      oldLogProbs,
      newLogProbs,
      mask,
      advantages,
      clipLow: 0.2,
      clipHigh: 0.2,
      aggregation: 'token-mean',
      ...options,
    });
  const referenceKl = (against: number[][]) =>
    klPenalty({ estimator: 'k3', oldLogProbs: against, newLogProbs, mask, aggregation: 'token-mean' });

  it('measures the KL even when klCoef is 0, with no gradient from it', () => {
    const result = createLossFunction({ oldLogProbs, advantages }, ppoClipLoss())(newLogProbs);
    const kl = referenceKl(oldLogProbs);
    const pg = referencePolicyLoss();
    expect(result.metrics!.kl).toBeGreaterThan(0);
    expect(result.metrics!.kl).toBe(kl.value);
    expect(result.value).toBe(pg.value);
    expect(result.gradNewLogProbs).toEqual(pg.gradNewLogProbs);
  });

  it('adds klCoef x KL to the value and the gradient when klCoef > 0', () => {
    const result = createLossFunction({ oldLogProbs, advantages }, ppoClipLoss({ klCoef: 0.5 }))(newLogProbs);
    const kl = referenceKl(oldLogProbs);
    const pg = referencePolicyLoss();
    expect(result.value).toBeCloseTo(pg.value + 0.5 * kl.value, 14);
    expect(result.gradNewLogProbs[0]![0]).toBeCloseTo(
      pg.gradNewLogProbs[0]![0]! + 0.5 * kl.gradNewLogProbs[0]![0]!,
      14,
    );
  });

  it('passes the verl options through: dual-clip (default bound 3), the log-ratio clamp, the KL against a frozen reference', () => {
    const settings = ppoClipLoss({ dualClip: true, logRatioClamp: 20, klCoef: 0.1 });
    const referenceLogProbs = [
      [-1.5, -1.5, -1.5],
      [-0.5, -0.5],
    ];
    const result = createLossFunction({ oldLogProbs, advantages, referenceLogProbs }, settings)(newLogProbs);
    const pg = referencePolicyLoss({ clipRatioC: 3, logRatioClamp: 20 });
    const kl = referenceKl(referenceLogProbs);
    expect(result.metrics).toMatchObject({ clipFractionLower: pg.clipFractionLower, kl: kl.value });
    expect(result.value).toBeCloseTo(pg.value + 0.1 * kl.value, 14);
    // Dual-clip bounds a negative advantage's loss: far above the old policy, -A x 3.
    const far = createLossFunction(
      { oldLogProbs: [[-3]], advantages: [-1] },
      ppoClipLoss({ dualClip: true }),
    )([[-3 + Math.log(10)]]);
    expect(far.value).toBeCloseTo(3, 12);
    expect(far.metrics!.clipFractionLower).toBe(1);
  });

  it("refuses another kind's settings and an unknown kind, naming the setting", () => {
    const batch = { oldLogProbs: [[-1]], advantages: [1] };
    expect(() => createLossFunction(batch, ppoClipLoss({ kind: 'gspo', dualClip: true }))).toThrow(
      /'settings\.dualClip'.*'ppo_clip' only, not 'gspo'/,
    );
    expect(() => createLossFunction(batch, ppoClipLoss({ kind: 'gspo', logRatioClamp: 20 }))).toThrow(
      /'settings\.logRatioClamp'/,
    );
    // Off is not set: a GSPO run may carry dualClip false and logRatioClamp null.
    expect(
      createLossFunction(batch, ppoClipLoss({ kind: 'gspo', dualClip: false, logRatioClamp: null }))([[-1]])
        .value,
    ).toBe(-1);
    expect(() => createLossFunction(batch, ppoClipLoss({ kind: 'grpo' as never }))).toThrow(
      /'settings\.kind'.*got grpo/,
    );
  });
});
