import type { Trajectory } from '../trajectory/trajectory';
import type { SearchR1RewardName } from '../reward/score';
import { mean } from '../stats';

/**
 * One rollout as curation sees it (docs/method.md#unified-log): the per-episode record derived
 * from a stored trajectory. Scores are `null` where the reward was missing or no judge was asked.
 */
export interface EpisodeSummary {
  runId: string;
  step: number;
  promptUid: string;
  sampleId: string;
  rolloutIndex: number;
  query: string;
  reference: string | null;
  goldenBasenames: string[];
  retrievedBasenames: string[];
  judgeScore: number | null;
  /**
   * How right the answer was by the reward where no judge was asked: the Search-R1 reward's answer
   * check scaled to [0, 1] (exact match 1, a close match 0.5, the not-found answer 0.25, else 0).
   * Absent or null: the judge score is the answer's score (answerScoreOf).
   */
  rewardScore?: number | null;
  ndcg: number | null;
  /** The combined reward, `null` when missing. */
  reward: number | null;
  formatPassed: boolean | null;
  searches: number;
  crops: number;
  /** Characters the policy wrote (turn texts). */
  textLength: number;
  answer: string;
  terminated: Trajectory['terminated'];
  /** The generator's or the episode's failure, if any. */
  errorStage: string | null;
}

/** The reward scheme a run scored its episodes with (`searcher.reward.scheme`). */
export type RewardSchemeName = 'searcher' | 'search-r1';

/**
 * The answer part of a Search-R1 reward, scaled to [0, 1]: the reward is format (0.5 passed, -1
 * failed) + answer (2, 1, 0.5 or 0; docs/method.md#search-r1-reward), so answer = reward - format.
 */
export function searchR1AnswerScore(reward: number, formatPassed: boolean): number {
  const answer = reward - (formatPassed ? 0.5 : -1);
  return Math.min(1, Math.max(0, answer / 2));
}

/**
 * The per-episode record of a stored trajectory. `scheme` is the run's reward scheme: under
 * `search-r1` (answer mode: no Generator, no judge) the reward's answer check is the answer's
 * score (`rewardScore`; `searchR1Reward` says which reward), so such runs can be bucketed into
 * rounds and distilled like judged ones.
 */
export function summariseTrajectory(
  trajectory: Trajectory,
  runId: string,
  step: number,
  options: { scheme?: RewardSchemeName; searchR1Reward?: SearchR1RewardName } = {},
): EpisodeSummary {
  const components = trajectory.rewardDetail?.components;
  const detail = trajectory.rewardDetail;
  // Search-R1's exact-match reward is the answer's score itself (1 or 0).
  const rewardScore =
    options.scheme === 'search-r1' && detail?.status === 'ok' && trajectory.reward !== null
      ? options.searchR1Reward === 'exact-match'
        ? Math.min(1, Math.max(0, trajectory.reward))
        : searchR1AnswerScore(trajectory.reward, detail.components.formatPassed)
      : null;
  return {
    runId,
    step,
    promptUid: trajectory.promptUid,
    sampleId: trajectory.sampleId,
    rolloutIndex: trajectory.rolloutIndex,
    query: trajectory.query,
    reference: trajectory.reference,
    goldenBasenames: trajectory.goldenBasenames,
    retrievedBasenames: trajectory.retrievedBasenames,
    judgeScore: components?.judgeScore ?? null,
    ...(rewardScore !== null && { rewardScore }),
    ndcg: components?.ndcg ?? null,
    reward: trajectory.reward,
    formatPassed: components?.formatPassed ?? null,
    searches: trajectory.turns.filter((turn) => turn.action?.type === 'search').length,
    crops: trajectory.turns.filter((turn) => turn.crop !== undefined).length,
    textLength: trajectory.turns.reduce((n, turn) => n + turn.text.length, 0),
    answer: trajectory.finalAnswer,
    terminated: trajectory.terminated,
    errorStage: trajectory.error?.stage ?? null,
  };
}

/** The answer's score in [0, 1]: the judge's, else the reward's (`rewardScore`); null when neither exists. */
export function answerScoreOf(e: Pick<EpisodeSummary, 'judgeScore' | 'rewardScore'>): number | null {
  return e.judgeScore ?? e.rewardScore ?? null;
}

/** One prompt's figures over its rollouts: mean NDCG, mean answer score and success rate. */
export interface PromptStats {
  promptUid: string;
  query: string;
  reference: string | null;
  goldenBasenames: string[];
  rollouts: number;
  /** Mean NDCG over the rollouts with one (0 when none has). */
  meanNdcg: number;
  /** Mean answer score (answerScoreOf) over the rollouts that have one, else the mean reward; `null` when neither exists. */
  meanScore: number | null;
  /** Share of rollouts with answer score >= the success threshold. */
  successRate: number;
  successes: number;
}

/** Per-prompt statistics, in first-seen order. A rollout succeeds when its answer score is >= `successAt` (1 by default: docs/method.md#rare-success-distillation counts score == 1). */
export function promptStats(episodes: readonly EpisodeSummary[], successAt = 1): PromptStats[] {
  const byPrompt = new Map<string, EpisodeSummary[]>();
  for (const e of episodes) {
    const list = byPrompt.get(e.promptUid);
    if (list) list.push(e);
    else byPrompt.set(e.promptUid, [e]);
  }
  return [...byPrompt].map(([promptUid, list]) => {
    const judged = list.flatMap((e) => {
      const score = answerScoreOf(e);
      return score === null ? [] : [score];
    });
    const rewards = list.flatMap((e) => (e.reward === null ? [] : [e.reward]));
    const successes = judged.filter((s) => s >= successAt).length;
    return {
      promptUid,
      query: list[0]!.query,
      reference: list[0]!.reference,
      goldenBasenames: list[0]!.goldenBasenames,
      rollouts: list.length,
      meanNdcg: mean(list.flatMap((e) => (e.ndcg === null ? [] : [e.ndcg]))),
      meanScore: judged.length > 0 ? mean(judged) : rewards.length > 0 ? mean(rewards) : null,
      successRate: list.length === 0 ? 0 : successes / list.length,
      successes,
    };
  });
}
