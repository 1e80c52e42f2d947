import { InvalidArgumentError } from '../errors';
import type { PromptRecord } from '../types';

/** One rollout to run: a prompt, its group and its index within the group. */
export interface EpisodeInstance {
  prompt: PromptRecord;
  groupId: string;
  rolloutIndex: number;
}

/** Rewards and logs are keyed by this id, never by batch position (docs/method.md#groups). */
export function sampleIdOf(groupId: string, rolloutIndex: number): string {
  return `${groupId}#${rolloutIndex}`;
}

export function checkInstances(instances: readonly EpisodeInstance[]): void {
  if (!Array.isArray(instances))
    throw new InvalidArgumentError({
      argument: 'instances',
      message: 'expected an array of episode instances',
    });
  const seen = new Set<string>();
  instances.forEach((instance, i) => {
    const prompt = instance?.prompt;
    if (typeof prompt?.question !== 'string')
      throw new InvalidArgumentError({
        argument: `instances[${i}].prompt.question`,
        message: 'must be a string',
      });
    if (typeof prompt.uid !== 'string' || prompt.uid.length === 0)
      throw new InvalidArgumentError({
        argument: `instances[${i}].prompt.uid`,
        message: 'must be a non-empty string',
      });
    if (prompt.reference !== undefined && typeof prompt.reference !== 'string')
      throw new InvalidArgumentError({
        argument: `instances[${i}].prompt.reference`,
        message: 'must be a string when given',
      });
    if (
      prompt.goldenBasenames !== undefined &&
      !(
        Array.isArray(prompt.goldenBasenames) &&
        prompt.goldenBasenames.every((b: unknown) => typeof b === 'string')
      )
    ) {
      throw new InvalidArgumentError({
        argument: `instances[${i}].prompt.goldenBasenames`,
        message: 'must be an array of basenames (strings) when given',
      });
    }
    if (typeof instance.groupId !== 'string' || instance.groupId.length === 0)
      throw new InvalidArgumentError({
        argument: `instances[${i}].groupId`,
        message: 'must be a non-empty string',
      });
    if (!(Number.isInteger(instance.rolloutIndex) && instance.rolloutIndex >= 0))
      throw new InvalidArgumentError({
        argument: `instances[${i}].rolloutIndex`,
        message: 'must be an integer >= 0',
      });
    const sampleId = sampleIdOf(instance.groupId, instance.rolloutIndex);
    if (seen.has(sampleId))
      throw new InvalidArgumentError({
        argument: `instances[${i}]`,
        message: `repeats sample '${sampleId}' (group id and rollout index must be unique)`,
      });
    seen.add(sampleId);
  });
}
