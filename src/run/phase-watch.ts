import type { Trajectory } from '../core/trajectory/trajectory';
import type { ScoredBatch } from '../searcher';

/** Steps of a phase watched before it is judged dead. */
export const WATCHED_STEPS = 2;

/** What the run knows that explains a dead phase: where the policy's weights came from. */
export interface PhaseWatchContext {
  phase: string;
  /** `fresh`, a checkpoint, or a named policy (RunSession.policyFrom). */
  policyFrom: string;
  /** Whether the warm start trained the policy on demonstrations in this run folder. */
  warmStarted: boolean;
}

/**
 * Watches a phase's first steps (`WATCHED_STEPS`, or fewer when the phase is shorter): when none
 * of their episodes made a valid action, or every reward was 0, it returns one warning saying so,
 * with the likely cause read from the episodes (they ran out of context, the policy writes no
 * action tag, no golden page was retrieved, the judge never agreed). Once per phase.
 */
export function createPhaseWatch(
  context: PhaseWatchContext,
  steps: number,
): { observe(step: number, batch: ScoredBatch): string | null } {
  const watched = Math.min(WATCHED_STEPS, steps);
  const seen: Trajectory[] = [];
  let done = false;
  return {
    observe(step, batch) {
      if (done || step > watched) return null;
      seen.push(...batch.episodes.map((e) => e.trajectory));
      if (step < watched) return null;
      done = true;
      return diagnose(context, seen, watched);
    },
  };
}

const share = (part: number, whole: number) => `${part} of ${whole}`;

function diagnose(context: PhaseWatchContext, episodes: readonly Trajectory[], steps: number): string | null {
  if (episodes.length === 0) return null;
  const where = `${context.phase}: in its first ${steps} step${steps > 1 ? 's' : ''} (${episodes.length} episodes)`;
  const turns = episodes.reduce((n, t) => n + t.turns.filter((turn) => !turn.forced).length, 0);
  const invalid = episodes.reduce((n, t) => n + t.invalidActions, 0);
  const outOfContext = episodes.filter((t) => t.terminated === 'context').length;
  if (turns - invalid <= 0) {
    const cause =
      outOfContext === episodes.length && turns === 0
        ? 'every episode ran out of context before its first turn: the prompt leaves no room for a turn (searcher.episode.instructions, searcher.episode.maxContextTokens, policy.contextLength)'
        : context.warmStarted
          ? 'the warm start did not teach the policy the action tags: give it more demonstrations or epochs (sft.demonstrations, sft.epochs, a larger sft.keepPerQuestion), or start from a checkpoint (policy.initFrom)'
          : context.policyFrom === 'fresh'
            ? 'the policy starts from fresh weights and writes no action tag: give it a warm start (sft.demonstrations above 0, or policy.initFrom)'
            : `the policy (${context.policyFrom}) writes no action tag the protocol reads: check searcher.episode.mode and the instructions it was trained with`;
    return `${where} no episode made a valid action. Likely cause: ${cause}. The phase learns nothing from them.`;
  }
  const rewards = episodes.map((t) => t.reward).filter((r): r is number => r !== null);
  if (rewards.length === 0 || rewards.some((r) => r !== 0)) return null;
  const formatPassed = episodes.filter((t) => t.rewardDetail?.components.formatPassed === true).length;
  const withGolden = episodes.filter((t) => t.goldenBasenames.length > 0);
  const goldenHits = withGolden.filter((t) =>
    t.retrievedBasenames.some((b) => t.goldenBasenames.includes(b)),
  ).length;
  const judged = episodes.filter((t) => typeof t.rewardDetail?.components.judgeScore === 'number');
  const causes: string[] = [];
  if (formatPassed === 0)
    causes.push(
      `no episode passed the format gate (every turn a valid action, ended by the policy's own search_complete or answer; ${share(outOfContext, episodes.length)} ran out of context)`,
    );
  if (withGolden.length > 0 && goldenHits === 0)
    causes.push(
      `no episode retrieved a golden page (${withGolden.length} had one): check that the questions' golden pages are the index's page names and that the searches find them`,
    );
  if (judged.length > 0)
    causes.push(
      `the judge gave 0 to all ${judged.length} judged answers: check the references and that the generator answers from the pages (a mock generator answers only from its facts table; the extractive one reads the pages)`,
    );
  return `${where} every reward was 0. Likely cause: ${causes.join('; ') || 'the reward weights of the phase give nothing to what the episodes did'}. GRPO learns nothing from a group whose rewards are all equal.`;
}
