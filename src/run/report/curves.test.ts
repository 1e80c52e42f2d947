import { describe, expect, it } from 'vitest';
import type { Trajectory } from '../../core/trajectory/trajectory';
import { difficultyBuckets, emaSmooth, reportCurves, rewardDefinition, type StepRollout } from './curves';

function rollout(
  step: number,
  promptUid: string,
  ndcg: number,
  extra: { judge?: number | null; crop?: boolean } = {},
): StepRollout {
  const turn = {
    index: 0,
    text: '',
    forced: false,
    think: null,
    action: null,
    invalid: null,
    ignoredActions: [],
    observation: '',
    ...(extra.crop
      ? {
          crop: {
            bbox: [0, 0, 1, 1],
            basename: 'a.png',
            sourceRegion: [0, 0, 1, 1],
            shownWidth: 1,
            shownHeight: 1,
          },
        }
      : {}),
  };
  const trajectory = {
    promptUid,
    sampleId: `${promptUid}#${step}`,
    rolloutIndex: 0,
    query: promptUid,
    reference: null,
    goldenBasenames: [],
    retrievedBasenames: [],
    turns: [turn],
    finalAnswer: '',
    terminated: 'complete',
    error: null,
    reward: ndcg,
    rewardDetail: {
      status: 'ok',
      value: ndcg,
      components: { formatPassed: true, judgeScore: extra.judge ?? null, ndcg },
      weights: { judge: 0, ndcg: 1, format: 0 },
    },
  } as unknown as Trajectory;
  return { runId: 'phase1', step, trajectory };
}

describe('report curves', () => {
  it('states a phase reward from its preset name or explicit weights', () => {
    expect(rewardDefinition('phase1')).toBe("0.1 format + 0.9 NDCG ('phase1')");
    expect(rewardDefinition('default')).toBe("0.8 judge + 0.2 NDCG ('default')");
    expect(rewardDefinition({ judge: 0.5, ndcg: 0.5, format: 0 })).toBe('0.5 judge + 0.5 NDCG');
    expect(rewardDefinition('default', 'search-r1')).toBe('Search-R1 exact match');
  });

  it('smooths with a debiased EMA that starts at the first value and skips nulls', () => {
    expect(emaSmooth([1, null, 1, 1], 0.6)).toEqual([1, null, 1, 1]);
    const [a, b] = emaSmooth([0, 1], 0.5) as number[];
    expect(a).toBe(0);
    expect(b).toBeCloseTo(2 / 3);
  });

  it('puts the phases on one step axis, restarts the EMA per phase and reads crop and small-print rates from rollouts', () => {
    const metric = (step: number, reward: number) => ({
      step,
      rewardMean: reward,
      successRate: null,
      ndcgMean: reward,
      turnsMean: 2,
    });
    const curves = reportCurves(
      [
        {
          name: 'phase1',
          steps: 3,
          weights: 'phase1',
          metrics: [metric(1, 0.1), metric(2, 0.2), metric(3, 0.3)],
          rollouts: [rollout(1, 'p', 0, { crop: true }), rollout(1, 'q', 0)],
        },
        {
          name: 'phase2',
          steps: 2,
          weights: 'default',
          metrics: [metric(1, 0.9), metric(2, 0.9)],
          rollouts: [
            rollout(1, 'small', 0, { judge: 1 }),
            rollout(1, 'small', 0, { judge: 0 }),
            rollout(2, 'p', 0),
          ],
        },
      ],
      new Set(['small']),
    );
    expect(curves.steps).toEqual([1, 2, 3, 4, 5]);
    expect(curves.phaseStep).toEqual([1, 2, 3, 1, 2]);
    expect(curves.phases.map((p) => [p.name, p.firstStep, p.lastStep, p.reward])).toEqual([
      ['phase1', 1, 3, "0.1 format + 0.9 NDCG ('phase1')"],
      ['phase2', 4, 5, "0.8 judge + 0.2 NDCG ('default')"],
    ]);
    expect(curves.metrics.reward.smoothed[3]).toBe(0.9);
    expect(curves.metrics.cropRate.raw).toEqual([0.5, null, null, 0, 0]);
    expect(curves.metrics.smallPrintSuccess.raw).toEqual([null, null, null, 0.5, null]);
  });

  it('buckets the mean NDCG of each (step, prompt) group, or only each prompt at its last step', () => {
    // Prompt p: at step 1 rollouts 0 and 0.5 (mean 0.25: A), at step 2 rollouts 1 and 1 (B); prompt q: 0 (bucket 0).
    const rollouts = [
      rollout(1, 'p', 0),
      rollout(1, 'p', 0.5),
      rollout(1, 'q', 0),
      rollout(2, 'p', 1),
      rollout(2, 'p', 1),
    ];
    expect(difficultyBuckets(rollouts)).toEqual({ B: 1, A: 1, '0': 1 });
    expect(difficultyBuckets(rollouts, { groups: 'last-step' })).toEqual({ B: 1, A: 0, '0': 1 });
  });
});
