import { PortOutputError } from '../errors';
import { createReliableCaller, type ReliabilityDeps } from '../calls/reliable-call';
import type { CallPolicy } from '../calls/call-policy';
import { checkPortVersion } from '../calls/port-version';
import type { IcdDemonstration, IcdQuery, IcdScore, IcdScorer } from '../../ports/icd-scorer';

/** Scores demonstrations for a query under the reliability rule; an accuracy outside [0, 1] is a failed call. */
export type IcdScoreCall = (
  query: IcdQuery,
  demonstrations: readonly IcdDemonstration[],
  signal?: AbortSignal,
) => Promise<IcdScore>;

/**
 * The IcdScorer port called through its reliable caller (docs/method.md#provider-calls): a
 * timeout per attempt, retries with backoff, the concurrency cap and rate limits of
 * `calls.icdScorer`, typed failures, and a check of the answer.
 */
export function createIcdScoreCall(
  scorer: IcdScorer,
  policy: Partial<CallPolicy> = {},
  deps: ReliabilityDeps = {},
): IcdScoreCall {
  checkPortVersion('icdScorer', scorer);
  const caller = createReliableCaller('icdScorer', scorer.provider, policy, deps);
  return async (query, demonstrations, signal) => {
    const score = await caller.call('score', (s) => scorer.doScore(query, demonstrations, { signal: s }), {
      args: [query.question, demonstrations.map((d) => d.question + d.answer)],
      signal,
    });
    if (
      typeof score !== 'object' ||
      score === null ||
      typeof score.accuracy !== 'number' ||
      !(score.accuracy >= 0 && score.accuracy <= 1)
    ) {
      throw new PortOutputError({
        port: 'icdScorer',
        provider: scorer.provider,
        field: 'accuracy',
        message: `expected a number in [0, 1], got ${JSON.stringify((score as IcdScore | null)?.accuracy)}`,
      });
    }
    return { answer: typeof score.answer === 'string' ? score.answer : '', accuracy: score.accuracy };
  };
}
