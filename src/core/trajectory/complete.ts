import type { RewardFailure, RewardOutcome } from '../reward/combine';
import type { TokenUsage } from '../../ports/types';
import type { Trajectory } from './trajectory';

/** The frozen Generator's terminal answer for an episode (docs/method.md#terminal-answer). */
export type TerminalAnswer =
  | { status: 'answered'; answer: string; usage: TokenUsage | null; block: string; blockIds: number[] }
  /** Nothing to ask: answer mode (the policy answered), the episode ended in error, or it failed the format gate (its reward is 0 whatever the answer). */
  | { status: 'skipped' }
  | { status: 'failed'; failure: RewardFailure };

export interface TrajectoryCompletion {
  terminal?: TerminalAnswer;
  reward?: RewardOutcome | null;
  /** `null`: the sample takes no part in the update (missing reward, or its group was left out). */
  advantage?: number | null;
}

/**
 * The one place a trajectory is completed: `runEpisodes` builds it from the episode (reward,
 * advantage and the generator's answer empty), and this returns a new trajectory with the
 * generator's `<answer>` block appended (loss mask 0), the reward with its detail, and the
 * advantage. The pipeline calls it once per sample when its group is assembled; nothing else
 * writes these fields.
 */
export function completeTrajectory(draft: Trajectory, completion: TrajectoryCompletion): Trajectory {
  const t: Trajectory = { ...draft };
  const terminal = completion.terminal;
  if (terminal?.status === 'answered') {
    t.finalAnswer = terminal.answer.trim();
    t.generatedText = draft.generatedText + terminal.block;
    t.fullInputIds = [...draft.fullInputIds, ...terminal.blockIds];
    t.lossMask = [...draft.lossMask, ...terminal.blockIds.map(() => 0)];
    t.generatorUsage = terminal.usage;
  } else if (terminal?.status === 'failed') {
    t.error = { stage: 'generator', kind: terminal.failure.kind, message: terminal.failure.message };
  }
  if (completion.reward !== undefined) {
    const reward = completion.reward;
    t.reward = reward && reward.status === 'ok' ? reward.value : null;
    t.rewardDetail = reward;
  }
  if (completion.advantage !== undefined) t.advantage = completion.advantage;
  return t;
}

/** The terminal answer recorded on a completed trajectory, for scoring it again. */
export function terminalAnswerOf(trajectory: Trajectory): TerminalAnswer {
  if (trajectory.error?.stage === 'generator') {
    return {
      status: 'failed',
      failure: {
        stage: 'generator',
        kind: (trajectory.error.kind ?? 'error') as RewardFailure['kind'],
        message: trajectory.error.message,
      },
    };
  }
  return { status: 'skipped' };
}
