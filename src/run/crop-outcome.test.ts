import { describe, expect, it } from 'vitest';
import type { Trajectory } from '../core/trajectory/trajectory';
import type { PromptRecord } from '../core/types';
import { cropFigures, cropOutcome, factPlace } from './crop-outcome';
import { describeEval, summarise } from './evaluate';

const FACT_BOX = [68, 251, 152, 259] as const;

const question = (
  uid: string,
  small: boolean,
  factBox: readonly number[] | undefined = FACT_BOX,
): PromptRecord => ({
  uid,
  question: `q ${uid}`,
  reference: 'x',
  goldenBasenames: ['a_1.png'],
  metadata: { small, ...(factBox && { factBox }) },
});

/** A trajectory whose turns crop `regions` (basename, source region), judged `judge`. */
const episode = (
  uid: string,
  crops: Array<[string, [number, number, number, number]]>,
  judge = 0,
): Trajectory =>
  ({
    promptUid: uid,
    goldenBasenames: ['a_1.png'],
    terminated: 'complete',
    turns: [
      { text: '<search>q</search>', observation: '' },
      ...crops.map(([basename, sourceRegion]) => ({
        text: '<bbox>…</bbox>',
        observation: '',
        crop: { bbox: sourceRegion, basename, sourceRegion, shownWidth: 640, shownHeight: 360 },
      })),
    ],
    rewardDetail: { status: 'ok', components: { judgeScore: judge, ndcg: 1, formatPassed: true } },
  }) as unknown as Trajectory;

describe('crop outcomes', () => {
  it('classify a crop as the right region, a wrong one, a needless one, or none', () => {
    const small = factPlace(question('s', true));
    const large = factPlace(question('l', false));
    expect(cropOutcome(episode('s', [['a_1.png', [60, 247, 160, 262]]]), small)).toBe('right');
    // Within the reader's 2 px.
    expect(cropOutcome(episode('s', [['a_1.png', [70, 253, 150, 257]]]), small)).toBe('right');
    // Another region of the golden page, half the region, or the same box on another page.
    expect(cropOutcome(episode('s', [['a_1.png', [340, 292, 480, 315]]]), small)).toBe('wrong');
    expect(cropOutcome(episode('s', [['a_1.png', [60, 247, 110, 262]]]), small)).toBe('wrong');
    expect(cropOutcome(episode('s', [['b_2.png', [60, 247, 160, 262]]]), small)).toBe('wrong');
    // A right crop after a wrong one counts as right.
    expect(
      cropOutcome(
        episode('s', [
          ['a_1.png', [340, 292, 480, 315]],
          ['a_1.png', [60, 247, 160, 262]],
        ]),
        small,
      ),
    ).toBe('right');
    expect(cropOutcome(episode('s', []), small)).toBe('none');
    expect(cropOutcome(episode('l', [['a_1.png', [60, 247, 160, 262]]]), large)).toBe('needless');
    expect(cropOutcome(episode('l', []), large)).toBe('none');
    // Questions without the metadata (your own data) are not classified.
    expect(factPlace({ uid: 'o', question: 'q', metadata: {} })).toBeNull();
    expect(cropOutcome(episode('o', [['a_1.png', [0, 0, 9, 9]]]), null)).toBeNull();
  });

  it('give the rates over cropped small-print questions and over large-type ones, in the evaluation summary', () => {
    const questions = [
      question('s1', true),
      question('s2', true),
      question('s3', true),
      question('s4', true),
      question('l1', false),
      question('l2', false),
    ];
    const trajectories = [
      episode('s1', [['a_1.png', [60, 247, 160, 262]]], 1),
      episode('s2', [['a_1.png', [60, 247, 160, 262]]], 1),
      episode('s3', [['a_1.png', [340, 292, 480, 315]]]),
      episode('s4', []),
      episode('l1', [['a_1.png', [60, 247, 160, 262]]], 1),
      episode('l2', [], 1),
    ];
    const figures = cropFigures(questions, trajectories);
    expect(figures.crops).toEqual({ right: 2, wrong: 1, needless: 1, smallCropped: 3, large: 2 });
    expect(figures.rightRegionRate).toBeCloseTo(2 / 3);
    expect(figures.wrongRegionRate).toBeCloseTo(1 / 3);
    expect(figures.needlessCropRate).toBe(0.5);
    const summary = summarise('test', questions, trajectories);
    expect(summary.rightRegionRate).toBeCloseTo(2 / 3);
    expect(summary.wrongRegionRate).toBeCloseTo(1 / 3);
    expect(summary.needlessCropRate).toBe(0.5);
    expect(summary.smallPrintCropRate).toBe(0.75);
    expect(describeEval(summary)).toContain('right region 66.7%, wrong 33.3%), needless crops 50.0%');
    // Nothing to count: null, not 0.
    const none = cropFigures([question('l1', false)], [episode('l1', [])]);
    expect(none.rightRegionRate).toBeNull();
    expect(none.needlessCropRate).toBe(0);
    expect(cropFigures([], []).needlessCropRate).toBeNull();
  });
});
