import type { Trajectory } from '../core/trajectory/trajectory';
import type { PromptRecord } from '../core/types';
import { mean } from '../core/stats';
import { isExactMatchSuccess, isJudgeSuccess } from '../core/reward/success';
import type { SearcherConfigInput } from '../config';
import type { Searcher } from '../searcher';
import type { RunConfig } from './config';
import type { RunEnvironment } from './environment';
import { cropFigures } from './crop-outcome';
import { clearStoreRun } from './folder';
import { progressOf, type RunOptions } from './progress';

/**
 * The figures of one evaluation (greedy rollouts on a split): judge success, NDCG, turns, crops and
 * small print.
 */
export interface EvalSummary {
  /** The split (slide runs) or the dataset file evaluated. */
  split: string;
  questions: number;
  /**
   * Episodes whose reward failed (a Generator or judge call that failed or missed its deadline):
   * recorded with their cause in the run's reward log and left out of every figure below, never
   * counted as a wrong answer. Absent from evaluations written before it (0).
   */
  failedRewards?: number;
  /** Share of questions given the judge's full score (answer mode, `reward.scheme: search-r1`: whose own answer matches the reference exactly). */
  judgeSuccess: number;
  /** The mean judge score (partial credit included: the similarity a >= 0.5 rule once counted as success); null in answer mode. Absent from evaluations written before it. */
  judgeScoreMean?: number | null;
  /** What `judgeSuccess` counts: the judge's score, or (answer mode) the policy's own answer by Search-R1's check. */
  successBy?: 'judge' | 'answer';
  ndcg: number;
  completion: number;
  /** Judge success on questions whose answer is in small print (crops needed); null without such questions. */
  smallPrintSuccess: number | null;
  /** Share of episodes with a crop. */
  cropRate: number;
  /** Share of small-print questions whose episode cropped. */
  smallPrintCropRate: number | null;
  /**
   * Of the small-print questions whose episode cropped, the share whose crop covered the region
   * holding the fact on its page, and the share whose crops missed it; of the questions whose fact
   * is legible on its page, the share cropped anyway (src/run/crop-outcome.ts). Absent from
   * evaluations written before they were counted; null without such questions.
   */
  rightRegionRate?: number | null;
  wrongRegionRate?: number | null;
  needlessCropRate?: number | null;
}

/** What an evaluation needs of an open run (`RunSession` has it). */
export interface EvaluationSession {
  config: RunConfig;
  env: RunEnvironment;
  runDir: string;
  searcher(overrides?: Omit<SearcherConfigInput, 'adapters'>): Promise<Searcher>;
}

export function summarise(
  label: string,
  questions: readonly PromptRecord[],
  scoredAndFailed: readonly Trajectory[],
  scheme: RunConfig['searcher']['reward']['scheme'] = 'searcher',
): EvalSummary {
  let trajectories = scoredAndFailed;
  const small = new Set(
    questions
      .filter((q) => (q.metadata as { small?: unknown } | undefined)?.small === true)
      .map((q) => q.uid),
  );
  // Success is the judge's full score; under 'search-r1' (no judge) the policy's own answer is an exact match of an accepted answer.
  const success =
    scheme === 'search-r1'
      ? (t: Trajectory) => (isExactMatchSuccess(t.finalAnswer, t) ? 1 : 0)
      : (t: Trajectory) => (isJudgeSuccess(t.rewardDetail?.components.judgeScore) ? 1 : 0);
  // A failed reward is masked, never a silent 0: the figures are over the episodes that were scored.
  const all = trajectories;
  trajectories = all.filter((t) => t.reward !== null);
  const smallOnes = trajectories.filter((t) => small.has(t.promptUid));
  const cropped = (t: Trajectory) => (t.turns.some((turn) => turn.crop) ? 1 : 0);
  const crops = cropFigures(questions, trajectories);
  return {
    split: label,
    questions: all.length,
    failedRewards: all.length - trajectories.length,
    judgeSuccess: mean(trajectories.map(success)),
    judgeScoreMean:
      scheme === 'search-r1'
        ? null
        : mean(trajectories.map((t) => t.rewardDetail?.components.judgeScore ?? 0)),
    ...(scheme === 'search-r1' && { successBy: 'answer' as const }),
    ndcg: mean(trajectories.map((t) => t.rewardDetail?.components.ndcg ?? 0)),
    completion: mean(trajectories.map((t) => (t.terminated === 'complete' ? 1 : 0))),
    smallPrintSuccess: smallOnes.length === 0 ? null : mean(smallOnes.map(success)),
    cropRate: mean(trajectories.map(cropped)),
    smallPrintCropRate: smallOnes.length === 0 ? null : mean(smallOnes.map(cropped)),
    rightRegionRate: crops.rightRegionRate,
    wrongRegionRate: crops.wrongRegionRate,
    needlessCropRate: crops.needlessCropRate,
  };
}

export async function evaluate(
  session: EvaluationSession,
  storeRun: string,
  split: RunConfig['evaluation']['split'],
  options: RunOptions,
): Promise<EvalSummary> {
  const { config } = session;
  const { label, prompts } = session.env.evaluation(split ?? config.evaluation.split);
  const questions = config.evaluation.limit === null ? prompts : prompts.slice(0, config.evaluation.limit);
  await clearStoreRun(session.runDir, storeRun);
  const searcher = await session.searcher({
    episode: { ...config.searcher.episode, temperature: config.evaluation.temperature },
    rl: { ...config.searcher.rl, nAgent: 1 },
    reward: { ...config.searcher.reward, weights: 'default' },
  });
  const trajectories: Trajectory[] = [];
  const chunk = 64;
  const progress = progressOf(options, `evaluating (${storeRun})`, questions.length);
  for (let start = 0; start < questions.length; start += chunk) {
    const batch = await searcher.collect(questions.slice(start, start + chunk), {
      nAgent: 1,
      runId: storeRun,
      step: 0,
      ...(options.signal && { signal: options.signal }),
    });
    trajectories.push(...batch.episodes.map((e) => e.trajectory));
    progress.update(Math.min(questions.length, start + chunk));
  }
  const summary = summarise(label, questions, trajectories, config.searcher.reward.scheme);
  progress.done(
    `${summary.successBy === 'answer' ? 'answer' : 'judge'} success ${pct(summary.judgeSuccess)}`,
  );
  return summary;
}

export const pct = (x: number | null) => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);

/** One line of an evaluation's figures. */
export function describeEval(summary: EvalSummary): string {
  const small =
    summary.smallPrintSuccess === null
      ? ''
      : `, small print ${pct(summary.smallPrintSuccess)} (cropped ${pct(summary.smallPrintCropRate)}; of those, right region ${pct(summary.rightRegionRate ?? null)}, wrong ${pct(summary.wrongRegionRate ?? null)}), needless crops ${pct(summary.needlessCropRate ?? null)}`;
  const counted =
    summary.successBy === 'answer'
      ? ' (exact match)'
      : summary.judgeScoreMean === undefined || summary.judgeScoreMean === null
        ? ''
        : ` (full score; mean judge score ${summary.judgeScoreMean.toFixed(3)})`;
  const failed = summary.failedRewards
    ? `; ${summary.failedRewards} of ${summary.questions} rewards failed (their causes in the run's reward log) and are left out`
    : '';
  return `${summary.successBy === 'answer' ? 'answer success' : 'judge success'} ${pct(summary.judgeSuccess)}${counted}, NDCG ${summary.ndcg.toFixed(3)}${small}, crops ${pct(summary.cropRate)}${failed}`;
}
