import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { failureCauses, funnelStages, hallucinationShare, ndcgJudgeDisagreements } from './analyses';
import { assignBuckets, bucketOf, countBuckets } from './buckets';
import { compareForDistillation, selectRareSuccesses } from './distill';
import { promptStats, type EpisodeSummary } from './episodes';
import { buildRound1, buildRound2 } from './rounds';
import { labelCandidate, parseVerificationLabel, verificationCandidates, type Verdict } from './verification';

let serial = 0;
const ep = (promptUid: string, over: Partial<EpisodeSummary> = {}): EpisodeSummary => ({
  runId: 'r',
  step: 1,
  promptUid,
  sampleId: `${promptUid}#${serial++}`,
  rolloutIndex: 0,
  query: `q ${promptUid}`,
  reference: 'ref',
  goldenBasenames: ['deck1_3.png'],
  retrievedBasenames: [],
  judgeScore: 0,
  ndcg: 0,
  reward: 0,
  formatPassed: true,
  searches: 1,
  crops: 0,
  textLength: 100,
  answer: 'a',
  terminated: 'complete',
  errorStage: null,
  ...over,
});

describe('difficulty buckets', () => {
  it('B > 0.7, A in [0.1, 0.7], 0 < 0.1, thresholds configurable', () => {
    expect([0.71, 0.7, 0.1, 0.099].map((x) => bucketOf(x))).toEqual(['B', 'A', 'A', '0']);
    expect(bucketOf(0.5, { bucketLow: 0.6, bucketHigh: 0.9 })).toBe('0');
  });
  it('every prompt lands in exactly one bucket', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 40 }), (values) => {
        const stats = promptStats(values.map((ndcg, i) => ep(`p${i}`, { ndcg })));
        const counts = countBuckets(assignBuckets(stats));
        return counts.A + counts.B + counts['0'] === values.length;
      }),
    );
  });
});

describe('ground-truth verification', () => {
  it('candidates: judge 0 or 0 < judge <= 0.3, with NDCG >= 0.5; one per prompt', () => {
    const episodes = [
      ep('a', { judgeScore: 0, ndcg: 0.5 }),
      ep('a', { judgeScore: 0, ndcg: 1 }),
      ep('b', { judgeScore: 0.3, ndcg: 0.6 }),
      ep('c', { judgeScore: 0.31, ndcg: 1 }),
      ep('d', { judgeScore: 0, ndcg: 0.49 }),
      ep('e', { judgeScore: null, ndcg: 1 }),
    ];
    const candidates = verificationCandidates(episodes);
    expect(candidates.map((c) => [c.episode.promptUid, c.reason, c.episode.ndcg])).toEqual([
      ['a', 'judge_zero_ndcg_high', 1],
      ['b', 'judge_low_ndcg_high', 0.6],
    ]);
  });
  it('labels from the golden-page answer', () => {
    expect(labelCandidate({ goldenScore: 0, rolloutVsGolden: 1, rolloutJudge: 0 })).toBe('GT_ERROR');
    expect(labelCandidate({ goldenScore: 0, rolloutVsGolden: 0, rolloutJudge: 0 })).toBe('BOTH_WRONG');
    expect(labelCandidate({ goldenScore: 1, rolloutVsGolden: 0, rolloutJudge: 0 })).toBe('GEN_ERROR');
    expect(labelCandidate({ goldenScore: 1, rolloutVsGolden: 1, rolloutJudge: 0.3 })).toBe('FORMAT_DIFF');
    expect(labelCandidate({ goldenScore: 0.5, rolloutVsGolden: 1, rolloutJudge: 0 })).toBe('UNCERTAIN');
    expect(labelCandidate({ goldenScore: null, rolloutVsGolden: 1, rolloutJudge: 0 })).toBe('UNCERTAIN');
    expect(parseVerificationLabel('Label: gt_error because the slide says 12')).toBe('GT_ERROR');
    expect(parseVerificationLabel('no idea')).toBeNull();
  });
});

const verdict = (promptUid: string, label: Verdict['label']): Verdict => ({
  promptUid,
  sampleId: `${promptUid}#0`,
  reason: 'judge_zero_ndcg_high',
  label,
  detail: {},
});

describe('focused rounds', () => {
  const phase1 = promptStats([
    ep('hardA', { ndcg: 0.4 }),
    ep('easyA', { ndcg: 0.4 }),
    ep('zero1', { ndcg: 0 }),
    ep('zero2', { ndcg: 0.05 }),
    ep('b', { ndcg: 0.9 }),
  ]);
  const phase2 = promptStats([
    ep('hardA', { judgeScore: 0.2 }),
    ep('easyA', { judgeScore: 1 }),
    ep('zero1', { judgeScore: 0 }),
    ep('zero2', { judgeScore: 0.25 }),
    ep('b', { judgeScore: 1 }),
  ]);
  it('round 1 = hard A + verified bucket 0; round 2 = score <= 0.3 minus GT errors', () => {
    const round1 = buildRound1(assignBuckets(phase1), phase2, [verdict('zero1', 'GT_ERROR')]);
    expect(round1.promptUids).toEqual(['hardA', 'zero2']);
    expect(round1.excluded).toEqual([{ promptUid: 'zero1', label: 'GT_ERROR' }]);
    expect(round1.counts).toEqual({ hardA: 1, bucket0: 2, bucket0Excluded: 1, bucket0Kept: 1, total: 2 });
    expect(round1.budget).toEqual({ batchSize: 16, nAgent: 8, maxTurns: 7, temperature: 1 });
    const after = promptStats([ep('hardA', { judgeScore: 0.3 }), ep('zero2', { judgeScore: 0.2 })]);
    const round2 = buildRound2(round1.promptUids, after, [
      verdict('zero2', 'GT_ERROR'),
      verdict('hardA', 'GEN_ERROR'),
    ]);
    expect(round2.promptUids).toEqual(['hardA']);
    expect(round2.counts).toEqual({ previous: 2, lowScore: 2, excluded: 1, total: 1 });
    expect(round2.budget.maxTurns).toBe(15);
  });
  it('the funnel lists every stage with counts', () => {
    const stages = funnelStages({
      questions: 6667,
      buckets: { B: 2791, A: 1560, '0': 637 },
      bucket0Excluded: 55,
      round1: { hardA: 272, bucket0Kept: 582, total: 854 },
      round2: { lowScore: 436, excluded: 82, total: 366 },
    });
    expect(stages.find((s) => s.stage.startsWith('bucket 0 removed'))).toEqual({
      stage: 'bucket 0 removed by review',
      count: 55,
      note: '8.6%',
    });
    expect(stages.at(-1)!.count).toBe(366);
  });
});

describe('rare-success distillation', () => {
  it('prompts with success rate <= 0.5 and a success; judge 1 only; zero-search and NDCG-0 excluded; top-k', () => {
    const episodes = [
      ...['x', 'y', 'z'].map((s, i) =>
        ep('rare', { judgeScore: 1, ndcg: 1, searches: 2 + i, sampleId: `rare#${s}` }),
      ),
      ep('rare', { judgeScore: 1, ndcg: 0, sampleId: 'rare#ndcg0' }),
      ep('rare', { judgeScore: 1, ndcg: 1, searches: 0, sampleId: 'rare#nosearch' }),
      ...Array.from({ length: 5 }, () => ep('rare', { judgeScore: 0 })),
      ep('easy', { judgeScore: 1, ndcg: 1 }),
      ep('never', { judgeScore: 0.5 }),
    ];
    const stats = promptStats(episodes);
    const { selected, counts } = selectRareSuccesses(episodes, stats, { topK: 2 });
    expect(selected.map((e) => e.sampleId)).toEqual(['rare#x', 'rare#y']);
    expect(counts).toEqual({
      prompts: 3,
      eligiblePrompts: 1,
      successes: 5,
      excludedZeroSearch: 1,
      excludedZeroNdcg: 1,
      selected: 2,
    });
    expect(
      selectRareSuccesses(episodes, stats, { keepZeroSearch: true, keepZeroNdcg: true, topK: 10 }).selected,
    ).toHaveLength(5);
  });
  it('orders by (score, NDCG) desc, then fewer searches, fewer crops, shorter text', () => {
    const list = [
      ep('p', { judgeScore: 1, ndcg: 0.5, sampleId: 'd' }),
      ep('p', { judgeScore: 1, ndcg: 1, searches: 2, sampleId: 'c' }),
      ep('p', { judgeScore: 1, ndcg: 1, crops: 1, sampleId: 'b' }),
      ep('p', { judgeScore: 1, ndcg: 1, textLength: 50, sampleId: 'a' }),
    ];
    expect([...list].sort(compareForDistillation).map((e) => e.sampleId)).toEqual(['a', 'b', 'c', 'd']);
  });
});

describe('analyses', () => {
  const episodes = [
    ep('p1', { judgeScore: 1, ndcg: 0, retrievedBasenames: ['deck1_4.png'] }),
    ep('p2', { judgeScore: 1, ndcg: 0, retrievedBasenames: ['deck9_1.png'] }),
    ep('p3', { judgeScore: 1, ndcg: 1 }),
    ep('p4', { judgeScore: 0, ndcg: 1 }),
    ep('p5', { judgeScore: 0, ndcg: 0 }),
  ];
  it('NDCG-vs-judge: same-document other page vs ungrounded', () => {
    expect(ndcgJudgeDisagreements(episodes)).toMatchObject({
      judgeSuccessNdcgZero: 2,
      sameDocumentOtherPage: 1,
      ungrounded: 1,
      ndcgHighJudgeZero: 1,
    });
    expect(hallucinationShare(episodes)).toEqual({ judgeSuccesses: 3, ungrounded: 1, share: 1 / 3 });
  });
  it('failure causes: search, generator, ground truth', () => {
    expect(failureCauses(episodes, [verdict('p5', 'GT_ERROR')])).toEqual({
      failures: 2,
      searchFailure: 0,
      generatorFailure: 1,
      groundTruthError: 1,
    });
  });
});
