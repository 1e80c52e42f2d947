import { answerScoreOf, type EpisodeSummary } from './episodes';
import type { Verdict } from './verification';

const deckOf = (basename: string) =>
  basename.replace(/_\d+\.[A-Za-z0-9]+$/, '').replace(/\.[A-Za-z0-9]+$/, '');

/**
 * Judge successes that NDCG scores 0, split by what was retrieved
 * (docs/method.md#difficulty-buckets).
 */
export interface DisagreementAnalysis {
  /** Judge success (score >= successAt) with NDCG 0. */
  judgeSuccessNdcgZero: number;
  /** ... of which a page of the golden page's document was retrieved (valid evidence NDCG misses). */
  sameDocumentOtherPage: number;
  /** ... of which nothing of the golden document was retrieved (an ungrounded answer). */
  ungrounded: number;
  /** NDCG >= 0.5 but judge 0. */
  ndcgHighJudgeZero: number;
  examples: Array<{ sampleId: string; kind: 'same_document' | 'ungrounded' | 'ndcg_high_judge_zero' }>;
}

/** NDCG-vs-judge disagreements (docs/method.md#unified-log). A document is the basename up to its `_page` suffix. */
export function ndcgJudgeDisagreements(
  episodes: readonly EpisodeSummary[],
  successAt = 1,
  maxExamples = 20,
): DisagreementAnalysis {
  const result: DisagreementAnalysis = {
    judgeSuccessNdcgZero: 0,
    sameDocumentOtherPage: 0,
    ungrounded: 0,
    ndcgHighJudgeZero: 0,
    examples: [],
  };
  const example = (sampleId: string, kind: DisagreementAnalysis['examples'][number]['kind']) => {
    if (result.examples.length < maxExamples) result.examples.push({ sampleId, kind });
  };
  for (const e of episodes) {
    const score = answerScoreOf(e);
    if (score !== null && score >= successAt && e.ndcg === 0) {
      result.judgeSuccessNdcgZero++;
      const goldenDocs = new Set(e.goldenBasenames.map(deckOf));
      if (e.retrievedBasenames.some((b) => goldenDocs.has(deckOf(b)))) {
        result.sameDocumentOtherPage++;
        example(e.sampleId, 'same_document');
      } else {
        result.ungrounded++;
        example(e.sampleId, 'ungrounded');
      }
    } else if (score === 0 && (e.ndcg ?? 0) >= 0.5) {
      result.ndcgHighJudgeZero++;
      example(e.sampleId, 'ndcg_high_judge_zero');
    }
  }
  return result;
}

/** Counts of low-score rollouts by cause (`failureCauses`). */
export interface FailureCauses {
  failures: number;
  /** The golden page was not retrieved (NDCG < ndcgFound). */
  searchFailure: number;
  /** The evidence was found but the answer was wrong (or the generator failed). */
  generatorFailure: number;
  /** Verification named the reference wrong (GT_ERROR) for the prompt. */
  groundTruthError: number;
}

/** Low-score rollouts (judge < successAt) split into search failure, generator failure and ground-truth error (docs/method.md#focused-rounds). */
export function failureCauses(
  episodes: readonly EpisodeSummary[],
  verdicts: readonly Verdict[] = [],
  options: { successAt?: number; ndcgFound?: number } = {},
): FailureCauses {
  const successAt = options.successAt ?? 1;
  const ndcgFound = options.ndcgFound ?? 0.5;
  const gtErrors = new Set(verdicts.filter((v) => v.label === 'GT_ERROR').map((v) => v.promptUid));
  const out: FailureCauses = { failures: 0, searchFailure: 0, generatorFailure: 0, groundTruthError: 0 };
  for (const e of episodes) {
    const score = answerScoreOf(e);
    if (score !== null && score >= successAt) continue;
    out.failures++;
    if (gtErrors.has(e.promptUid)) out.groundTruthError++;
    else if ((e.ndcg ?? 0) < ndcgFound) out.searchFailure++;
    else out.generatorFailure++;
  }
  return out;
}

/** The share of judge-only successes (judge success, NDCG 0, no golden-document page seen) among all judge successes. */
export function hallucinationShare(
  episodes: readonly EpisodeSummary[],
  successAt = 1,
): { judgeSuccesses: number; ungrounded: number; share: number } {
  const successes = episodes.filter((e) => (answerScoreOf(e) ?? -1) >= successAt);
  const { ungrounded } = ndcgJudgeDisagreements(successes, successAt, 0);
  return {
    judgeSuccesses: successes.length,
    ungrounded,
    share: successes.length === 0 ? 0 : ungrounded / successes.length,
  };
}

/** One stage of the curation funnel: its name, the prompts at it, and a note (such as a share). */
export interface FunnelStage {
  stage: string;
  count: number;
  note?: string;
}

/** The funnel as docs/method.md#difficulty-buckets reports it: questions, buckets, bucket 0 review, rounds 1, 2 and 3. */
export function funnelStages(input: {
  questions: number;
  buckets: Record<'B' | 'A' | '0', number>;
  bucket0Excluded?: number;
  round1?: { hardA: number; bucket0Kept: number; total: number; hardAExcluded?: number };
  round2?: { lowScore: number; excluded: number; total: number; from?: string };
  round3?: { excluded: number; total: number };
}): FunnelStage[] {
  const stages: FunnelStage[] = [
    { stage: 'questions', count: input.questions },
    { stage: 'bucket B (mastered, dropped)', count: input.buckets.B },
    { stage: 'bucket A (edge of competence)', count: input.buckets.A },
    { stage: 'bucket 0 (unsolvable for now)', count: input.buckets['0'] },
  ];
  if (input.bucket0Excluded !== undefined) {
    const share = input.buckets['0'] === 0 ? 0 : input.bucket0Excluded / input.buckets['0'];
    stages.push({
      stage: 'bucket 0 removed by review',
      count: input.bucket0Excluded,
      note: `${(share * 100).toFixed(1)}%`,
    });
  }
  if (input.round1)
    stages.push({
      stage: 'focused round 1',
      count: input.round1.total,
      note: `hard A ${input.round1.hardA} + bucket 0 kept ${input.round1.bucket0Kept}${input.round1.hardAExcluded ? `; ${input.round1.hardAExcluded} hard A removed by verification` : ''}`,
    });
  if (input.round2)
    stages.push({
      stage: 'focused round 2',
      count: input.round2.total,
      note: `score <= 0.3${input.round2.from ? ` in ${input.round2.from}` : ''}: ${input.round2.lowScore}, minus ${input.round2.excluded} excluded`,
    });
  if (input.round3)
    stages.push({
      stage: 'focused round 3',
      count: input.round3.total,
      note: `round 2's data from the distilled SFT checkpoint, minus ${input.round3.excluded} excluded`,
    });
  return stages;
}
