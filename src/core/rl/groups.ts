import { InvalidArgumentError } from '../errors';
import type { EpisodeInstance } from '../episode/instances';
import type { PromptRecord } from '../types';

/**
 * B prompts x n_agent rollouts, interleaved as verl's `repeat(interleave=True)`:
 * [p0 r0, p0 r1, …, p0 rN-1, p1 r0, …]. Each prompt instance gets its own group id
 * (`s{step}-b{batchIndex}-{uid}`), stable even when one question appears twice in a batch.
 */
export function expandGroups(
  prompts: readonly PromptRecord[],
  nAgent: number,
  options: { step?: number } = {},
): EpisodeInstance[] {
  if (!(Number.isInteger(nAgent) && nAgent >= 1))
    throw new InvalidArgumentError({
      argument: 'nAgent',
      message: `must be an integer >= 1, got ${String(nAgent)}`,
    });
  const step = options.step ?? 0;
  const instances: EpisodeInstance[] = [];
  prompts.forEach((prompt, batchIndex) => {
    if (typeof prompt?.uid !== 'string' || prompt.uid.length === 0)
      throw new InvalidArgumentError({
        argument: `prompts[${batchIndex}].uid`,
        message: 'must be a non-empty string',
      });
    const groupId = `s${step}-b${batchIndex}-${prompt.uid}`;
    for (let rolloutIndex = 0; rolloutIndex < nAgent; rolloutIndex++)
      instances.push({ prompt, groupId, rolloutIndex });
  });
  return instances;
}
