import type { PortGateway } from '../calls/gateway';
import { createPortGateway, singleAttemptPolicies } from '../calls/gateway';
import { classifyFailure } from '../calls/failures';
import { AbortedError } from '../errors';
import { completeTrajectory, type TerminalAnswer } from '../trajectory/complete';
import type { Generator } from '../../ports/generator';
import type { PolicyBackend } from '../../ports/policy-backend';
import type { Evidence } from '../../ports/types';
import type { EpisodeConfig } from './config';
import type { Episode } from './run-episodes';

/** Evidence for the Generator: retrieved pages first, then crops, deduplicated, at most `max`. */
export function selectEvidence(evidence: readonly Evidence[], max: number): Evidence[] {
  const seen = new Set<string>();
  const key = (e: Evidence) =>
    e.kind === 'page'
      ? `page:${e.basename}`
      : `crop:${e.basename}:${e.sourceRegion?.map((v) => v.toFixed(2)).join(',')}`;
  const ordered = [
    ...evidence.filter((e) => e.kind === 'page'),
    ...evidence.filter((e) => e.kind === 'crop'),
  ];
  const out: Evidence[] = [];
  for (const e of ordered) {
    const k = key(e);
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(e);
    if (out.length >= max) break;
  }
  return out;
}

export interface TerminalAnswerOptions {
  /** Encodes the `<answer>` block appended to the trajectory (the policy's tokenizer). */
  policy: Pick<PolicyBackend, 'tokenizer'>;
  maxEvidence?: number;
  mode?: EpisodeConfig['mode'];
  signal?: AbortSignal;
}

/**
 * The terminal augmentation (docs/method.md#terminal-answer): the frozen Generator answers from
 * the episode's evidence. In `answer` mode, or after an episode error, nothing is called. A
 * generator failure is returned as such (the reward will be missing, not 0); an abort propagates.
 */
export async function generateTerminalAnswer(
  episode: Episode,
  gateway: PortGateway,
  options: TerminalAnswerOptions,
): Promise<TerminalAnswer> {
  const t = episode.trajectory;
  if (options.mode === 'answer' || t.terminated === 'error' || t.terminated === 'answer')
    return { status: 'skipped' };
  try {
    const result = await gateway.answer(
      t.query,
      selectEvidence(episode.evidence, options.maxEvidence ?? 8),
      options.signal,
    );
    const block = `<answer>${result.answer}</answer>`;
    return {
      status: 'answered',
      answer: result.answer,
      usage: result.usage ?? null,
      block,
      blockIds: options.policy.tokenizer.encode(block),
    };
  } catch (error) {
    if (AbortedError.isInstance(error)) throw error;
    return { status: 'failed', failure: classifyFailure('generator', error) };
  }
}

/**
 * Stepwise use without a pipeline: the Generator's answer for one episode, applied to a new
 * trajectory (the generator is called once, plainly; `createSearcher` adds retries and limits).
 */
export async function completeWithGenerator(
  episode: Episode,
  generator: Generator,
  options: TerminalAnswerOptions,
): Promise<Episode> {
  const terminal = await generateTerminalAnswer(
    episode,
    createPortGateway({ generator }, singleAttemptPolicies()),
    options,
  );
  return { ...episode, trajectory: completeTrajectory(episode.trajectory, { terminal }) };
}
