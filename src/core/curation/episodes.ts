import type { Trajectory } from '../trajectory/trajectory';
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

export function summariseTrajectory(trajectory: Trajectory, runId: string, step: number): EpisodeSummary {
  const components = trajectory.rewardDetail?.components;
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

export interface PromptStats {
  promptUid: string;
  query: string;
  reference: string | null;
  goldenBasenames: string[];
  rollouts: number;
  /** Mean NDCG over the rollouts with one (0 when none has). */
  meanNdcg: number;
  /** Mean judge score over the rollouts judged, else the mean reward; `null` when neither exists. */
  meanScore: number | null;
  /** Share of rollouts with judge score >= the success threshold. */
  successRate: number;
  successes: number;
}

/** Per-prompt statistics, in first-seen order. A rollout succeeds when its judge score is >= `successAt` (1 by default: docs/method.md#rare-success-distillation counts score == 1). */
export function promptStats(episodes: readonly EpisodeSummary[], successAt = 1): PromptStats[] {
  const byPrompt = new Map<string, EpisodeSummary[]>();
  for (const e of episodes) {
    const list = byPrompt.get(e.promptUid);
    if (list) list.push(e);
    else byPrompt.set(e.promptUid, [e]);
  }
  return [...byPrompt].map(([promptUid, list]) => {
    const judged = list.flatMap((e) => (e.judgeScore === null ? [] : [e.judgeScore]));
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
