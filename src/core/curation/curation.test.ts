import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { failureCauses, funnelStages, hallucinationShare, ndcgJudgeDisagreements } from './analyses';
import { assignBuckets, bucketOf, countBuckets } from './buckets';
import { compareForDistillation, dropThinkActionTagRows, selectRareSuccesses, type SftRow } from './distill';
import { promptStats, searchR1AnswerScore, summariseTrajectory, type EpisodeSummary } from './episodes';
import { buildRound1, buildRound2, buildRound3 } from './rounds';
import {
  bucketZeroCandidates,
  EXCLUDING_LABELS,
  labelCandidate,
  labelGoldenReview,
  parseVerificationLabel,
  VERIFICATION_LABELS,
  verificationCandidates,
  type Verdict,
} from './verification';
import type { Trajectory } from '../trajectory/trajectory';

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
    expect(round1.counts).toEqual({
      hardA: 1,
      hardAExcluded: 0,
      bucket0: 2,
      bucket0Excluded: 1,
      bucket0Kept: 1,
      total: 2,
    });
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

// Issue 25: the data-centric loop in full (docs/method.md#focused-rounds).
describe('GT errors and uncertain items leave every round', () => {
  const phase1 = promptStats([
    ep('hardA', { ndcg: 0.4 }),
    ep('badA', { ndcg: 0.4 }),
    ep('zero', { ndcg: 0 }),
  ]);
  const phase2 = promptStats([
    ep('hardA', { judgeScore: 0 }),
    ep('badA', { judgeScore: 0 }),
    ep('zero', { judgeScore: 0 }),
  ]);
  it('a GT_ERROR in bucket A is not in round 1 (only bucket 0 was filtered before)', () => {
    const round1 = buildRound1(assignBuckets(phase1), phase2, [verdict('badA', 'GT_ERROR')]);
    expect(round1.promptUids).toEqual(['hardA', 'zero']);
    expect(round1.excluded).toEqual([{ promptUid: 'badA', label: 'GT_ERROR' }]);
    expect(round1.counts).toMatchObject({ hardA: 1, hardAExcluded: 1, bucket0Excluded: 0, total: 2 });
  });
  it('round 3 is round 2 again, minus what verification excluded since, with the 32 x 16, 15-turn budget', () => {
    const round3 = buildRound3(['a', 'b', 'c'], [verdict('b', 'UNCERTAIN'), verdict('c', 'GT_OK')]);
    expect(round3.promptUids).toEqual(['a', 'c']);
    expect(round3.excluded).toEqual([{ promptUid: 'b', label: 'UNCERTAIN' }]);
    expect(round3.budget).toEqual({ batchSize: 32, nAgent: 16, maxTurns: 15, temperature: 1 });
    expect(round3.name).toBe('focused_round3');
  });
  it('no round ever holds an excluded prompt; round 2 is within round 1 and round 3 within round 2 (property)', () => {
    const uid = fc.constantFrom('p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6', 'p7');
    fc.assert(
      fc.property(
        fc.array(fc.record({ uid, ndcg: fc.double({ min: 0, max: 1, noNaN: true }) }), { maxLength: 30 }),
        fc.array(fc.record({ uid, score: fc.double({ min: 0, max: 1, noNaN: true }) }), { maxLength: 30 }),
        fc.array(fc.record({ uid, score: fc.double({ min: 0, max: 1, noNaN: true }) }), { maxLength: 30 }),
        fc.array(fc.record({ uid, label: fc.constantFrom(...VERIFICATION_LABELS) }), { maxLength: 10 }),
        (first, second, roundOne, labels) => {
          const verdicts = labels.map((l) => verdict(l.uid, l.label));
          const excluded = new Set(
            verdicts.filter((v) => EXCLUDING_LABELS.has(v.label)).map((v) => v.promptUid),
          );
          const buckets = assignBuckets(promptStats(first.map((e) => ep(e.uid, { ndcg: e.ndcg }))));
          const r1 = buildRound1(
            buckets,
            promptStats(second.map((e) => ep(e.uid, { judgeScore: e.score }))),
            verdicts,
          );
          const r2 = buildRound2(
            r1.promptUids,
            promptStats(roundOne.map((e) => ep(e.uid, { judgeScore: e.score }))),
            verdicts,
          );
          const r3 = buildRound3(r2.promptUids, verdicts);
          for (const round of [r1, r2, r3]) {
            if (round.promptUids.some((u) => excluded.has(u))) return false;
            if (round.counts.total !== round.promptUids.length) return false;
          }
          return (
            r2.promptUids.every((u) => r1.promptUids.includes(u)) &&
            r3.promptUids.every((u) => r2.promptUids.includes(u))
          );
        },
      ),
    );
  });
  it('round 2 is built from the scores it is given (round 1 results), not from the phase-2 ones', () => {
    const round1 = buildRound1(assignBuckets(phase1), phase2, []);
    const afterRound1 = promptStats([ep('hardA', { judgeScore: 1 }), ep('zero', { judgeScore: 0.1 })]);
    expect(buildRound2(round1.promptUids, afterRound1, []).promptUids).toEqual(['zero']);
  });
});

describe('bucket-0 review', () => {
  it('one candidate per bucket-0 prompt, its highest-NDCG rollout, whatever the judge said', () => {
    const episodes = [
      ep('zero', { ndcg: 0, judgeScore: null, sampleId: 'zero#0' }),
      ep('zero', { ndcg: 0.05, judgeScore: null, sampleId: 'zero#1' }),
      ep('a', { ndcg: 0.5, judgeScore: null }),
    ];
    const candidates = bucketZeroCandidates(assignBuckets(promptStats(episodes)), episodes);
    expect(candidates.map((c) => [c.episode.sampleId, c.reason])).toEqual([['zero#1', 'bucket0_review']]);
    // Rollout candidates never reach bucket 0: NDCG < 0.1 there, and they need NDCG >= 0.5.
    expect(verificationCandidates(episodes)).toEqual([]);
  });
  it('labels: the golden page gives the reference (GT_OK), cannot (GT_ERROR), in between or no score (UNCERTAIN)', () => {
    expect([1, 0.7, 0.5, 0.3, 0, null].map(labelGoldenReview)).toEqual([
      'GT_OK',
      'GT_OK',
      'UNCERTAIN',
      'GT_ERROR',
      'GT_ERROR',
      'UNCERTAIN',
    ]);
    expect(parseVerificationLabel('verdict: gt_ok')).toBe('GT_OK');
    expect(EXCLUDING_LABELS.has('GT_OK')).toBe(false);
  });
});

describe('answer-mode runs (the Search-R1 reward) are distilled with the reward as the success signal', () => {
  const trajectory = (promptUid: string, rollout: number, reward: number, formatPassed: boolean) =>
    ({
      sampleId: `${promptUid}#${rollout}`,
      promptUid,
      rolloutIndex: rollout,
      query: `q ${promptUid}`,
      reference: 'Paris',
      goldenBasenames: ['d1'],
      retrievedBasenames: ['d1'],
      turns: [{ text: '<search>x</search>', action: { type: 'search' }, observation: 'obs' }],
      finalAnswer: 'Paris',
      terminated: 'answer',
      reward,
      rewardDetail: {
        status: 'ok',
        value: reward,
        components: { formatPassed, judgeScore: null, ndcg: 1 },
        weights: { judge: 1, ndcg: 0, format: 0 },
      },
    }) as unknown as Trajectory;
  it('the answer part of the reward, scaled to [0, 1], for every format and answer outcome (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(0.5, -1), fc.constantFrom(0, 0.5, 1, 2), (format, answer) => {
        return searchR1AnswerScore(format + answer, format > 0) === answer / 2;
      }),
    );
  });
  it('an exact match is a success; without the scheme nothing is (what happened before)', () => {
    const trajectories = [
      trajectory('rare', 0, 2.5, true),
      ...[1, 2, 3].map((i) => trajectory('rare', i, 0.5, true)),
      trajectory('close', 0, 1.5, true),
    ];
    const plain = trajectories.map((t) => summariseTrajectory(t, 'phase2', 1));
    expect(selectRareSuccesses(plain, promptStats(plain)).selected).toEqual([]);
    const scored = trajectories.map((t) => summariseTrajectory(t, 'phase2', 1, { scheme: 'search-r1' }));
    expect(scored.map((e) => e.rewardScore)).toEqual([1, 0, 0, 0, 0.5]);
    expect(scored[0]!.judgeScore).toBeNull();
    const { selected, counts } = selectRareSuccesses(scored, promptStats(scored));
    expect(selected.map((e) => e.sampleId)).toEqual(['rare#0']);
    expect(counts).toMatchObject({ eligiblePrompts: 1, successes: 1, selected: 1 });
    expect(promptStats(scored).map((s) => s.meanScore)).toEqual([0.25, 0.5]);
  });
  it("under Search-R1's exact-match reward the reward is the answer's score", () => {
    const trajectories = [
      trajectory('rare', 0, 1, true),
      trajectory('rare', 1, 0, false),
      trajectory('close', 0, 0, true),
    ];
    const scored = trajectories.map((t) =>
      summariseTrajectory(t, 'phase2', 1, { scheme: 'search-r1', searchR1Reward: 'exact-match' }),
    );
    expect(scored.map((e) => e.rewardScore)).toEqual([1, 0, 0]);
    expect(selectRareSuccesses(scored, promptStats(scored)).selected.map((e) => e.sampleId)).toEqual([
      'rare#0',
    ]);
  });
});

describe('distilled rows with an action tag inside a think', () => {
  const row = (uid: string, ...turns: string[]): SftRow => ({
    uid,
    format_version: 'v1',
    messages: [
      { role: 'system', content: 's' },
      { role: 'user', content: 'q' },
      ...turns.flatMap((content) => [
        { role: 'assistant' as const, content },
        { role: 'user' as const, content: 'observation <search>echoed</search>' },
      ]),
    ],
  });
  it('are dropped, whichever turn holds it; tags outside thinks and in observations are the actions themselves', () => {
    const rows = [
      row(
        'clean',
        '<think>find revenue</think>\n<search>revenue</search>',
        '<think>done</think>\n<search_complete>true</search_complete>',
      ),
      row(
        'polluted',
        '<think>find revenue</think>\n<search>revenue</search>',
        '<think>use <bbox> then</think>\n<bbox>[1,2,3,4]</bbox>',
      ),
      row('closing', '<think>I wrote </ANSWER> by mistake</think>\n<search>x</search>'),
    ];
    const out = dropThinkActionTagRows(rows);
    expect(out.rows.map((r) => r.uid)).toEqual(['clean']);
    expect(out.dropped).toBe(2);
  });
});
