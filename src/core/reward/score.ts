import { classifyFailure } from '../calls/failures';
import { createPortGateway, singleAttemptPolicies, type PortGateway } from '../calls/gateway';
import { AbortedError } from '../errors';
import { terminalAnswerOf, type TerminalAnswer } from '../trajectory/complete';
import type { Trajectory } from '../trajectory/trajectory';
import type { Judge } from '../../ports/judge';
import {
  combineReward,
  DEFAULT_REWARD_WEIGHTS,
  type RewardFailure,
  type RewardOutcome,
  type RewardWeights,
} from './combine';
import { acceptedAnswers } from './exact-match';
import { ndcgAtK, type NdcgOptions } from './ndcg';
import { checkFormatCorrectness, searchR1ExactMatchReward, searchR1Reward } from './search-r1';

/** How a sample's reward is computed (docs/method.md#rewards). */
export interface RewardSettings {
  /** `searcher`: gate + weights over judge, NDCG, format. `search-r1`: the format + answer reward of docs/method.md#search-r1-reward. */
  scheme: 'searcher' | 'search-r1';
  weights?: RewardWeights;
  /** NDCG cutoff; `null` ranks everything retrieved. */
  ndcgK?: number | null;
  ndcgIdeal?: NdcgOptions['ideal'];
  /**
   * Under `search-r1`, which reward: `format-answer` (default) the format check plus the answer
   * check, in [-1, 2.5]; `exact-match` Search-R1's outcome reward, 1 for an exact answer, else 0
   * (docs/method.md#search-r1-reward).
   */
  searchR1Reward?: SearchR1RewardName;
}

/** The two rewards of the `search-r1` scheme. */
export const SEARCH_R1_REWARDS = ['format-answer', 'exact-match'] as const;
export type SearchR1RewardName = (typeof SEARCH_R1_REWARDS)[number];

/** The reward part of a Searcher's configuration, by default (weights by preset name or explicit). */
export const DEFAULT_REWARD_CONFIG = Object.freeze({
  scheme: 'searcher',
  weights: 'default',
  ndcgK: null,
  ndcgIdeal: 'cutoff',
  searchR1Reward: 'format-answer',
} as const);

export interface ScoreOptions extends RewardSettings {
  judge?: Judge;
  signal?: AbortSignal;
}

/**
 * The format gate of the Searcher protocol: every policy turn was a valid action and the policy
 * itself ended the episode (`<search_complete>` or `<answer>`), not the turn budget or an error.
 */
export function formatPassed(trajectory: Trajectory): boolean {
  return (
    trajectory.invalidActions === 0 &&
    (trajectory.terminated === 'complete' || trajectory.terminated === 'answer')
  );
}

/**
 * A completed trajectory's reward (its generator answer or failure recorded on it), with the judge
 * called plainly (once, no timeout). Whatever cannot be computed is missing, with its cause.
 */
export function scoreTrajectory(trajectory: Trajectory, options: ScoreOptions): Promise<RewardOutcome> {
  const { judge, signal, ...settings } = options;
  const gateway = createPortGateway(judge ? { judge } : {}, singleAttemptPolicies());
  return scoreEpisode(trajectory, terminalAnswerOf(trajectory), settings, {
    gateway,
    ...(signal && { signal }),
  });
}

/**
 * Computes one episode's reward from its trajectory and the Generator's terminal answer.
 * Whatever cannot be computed (the episode or the generator failed, the judge failed or answered
 * nonsense) makes the reward missing, with its cause. Aborts propagate.
 */
export async function scoreEpisode(
  trajectory: Trajectory,
  terminal: TerminalAnswer,
  options: RewardSettings,
  calls: { gateway: PortGateway; signal?: AbortSignal },
): Promise<RewardOutcome> {
  const weights = options.weights ?? DEFAULT_REWARD_WEIGHTS;
  const ndcg = ndcgAtK(
    trajectory.retrievedBasenames,
    trajectory.goldenBasenames,
    options.ndcgK ?? DEFAULT_REWARD_CONFIG.ndcgK,
    { ideal: options.ndcgIdeal ?? DEFAULT_REWARD_CONFIG.ndcgIdeal },
  );
  const passed = formatPassed(trajectory);
  // Every unscored outcome carries the same components, so only the cause differs.
  const missing = (cause: RewardFailure): RewardOutcome => ({
    status: 'missing',
    cause,
    components: { ndcg, formatPassed: passed },
    weights,
  });

  // A provider failure during the episode is not the policy's fault, under either scheme.
  if (trajectory.error && trajectory.error.stage !== 'generator') {
    return missing({
      stage: 'episode',
      kind: failureKind(trajectory.error.kind),
      message: `${trajectory.error.stage}: ${trajectory.error.message}`,
    });
  }

  if (options.scheme === 'search-r1') {
    // Every accepted answer counts (Search-R1's golden_answers), not the reference alone.
    const truths = acceptedAnswers(trajectory);
    if (truths.length === 0) {
      return missing({
        stage: 'judge',
        kind: 'invalid_output',
        message: `prompt '${trajectory.promptUid}' has no reference answer`,
      });
    }
    const policyText = trajectory.generatedText + (terminal.status === 'answered' ? terminal.block : '');
    if ((options.searchR1Reward ?? DEFAULT_REWARD_CONFIG.searchR1Reward) === 'exact-match') {
      return {
        status: 'ok',
        value: searchR1ExactMatchReward(policyText, truths),
        components: { formatPassed: checkFormatCorrectness(policyText) > 0, judgeScore: null, ndcg },
        weights,
      };
    }
    const r = searchR1Reward(policyText, truths);
    return {
      status: 'ok',
      value: r.total,
      components: { formatPassed: r.format > 0, judgeScore: null, ndcg },
      weights,
    };
  }

  let judgeScore: number | null = null;
  if (weights.judge !== 0 && passed) {
    // The generator's answer is only needed when the judge will read it.
    if (terminal.status === 'failed') {
      return missing({
        stage: 'generator',
        kind: failureKind(terminal.failure.kind),
        message: terminal.failure.message,
      });
    }
    if (!calls.gateway.ports.judge) {
      return missing({
        stage: 'judge',
        kind: 'error',
        message: 'the judge weight is non-zero but no judge was given',
      });
    }
    if (trajectory.reference === null) {
      return missing({
        stage: 'judge',
        kind: 'invalid_output',
        message: `prompt '${trajectory.promptUid}' has no reference answer to judge against`,
      });
    }
    try {
      const answer = terminal.status === 'answered' ? terminal.answer.trim() : trajectory.finalAnswer;
      const verdict = await calls.gateway.score(trajectory.query, answer, trajectory.reference, calls.signal);
      judgeScore = verdict.score;
    } catch (error) {
      if (AbortedError.isInstance(error)) throw error;
      return missing(classifyFailure('judge', error));
    }
  }
  return combineReward({ formatPassed: passed, judgeScore, ndcg }, weights);
}

const KINDS = new Set<RewardFailure['kind']>([
  'timeout',
  'deadline',
  'provider_error',
  'adapter_error',
  'invalid_output',
  'aborted',
  'error',
]);
function failureKind(kind: string | undefined): RewardFailure['kind'] {
  return kind !== undefined && KINDS.has(kind as RewardFailure['kind'])
    ? (kind as RewardFailure['kind'])
    : 'error';
}
