import { InvalidArgumentError } from '../core/errors';
import type { PolicyCheckpoint } from '../ports/policy-backend';

/**
 * Refuses a checkpoint written by another backend before anything is read from it: an
 * InvalidArgumentError on `checkpoint.format` naming the expected and the given format, and `hint`
 * (what to do instead) in parentheses after them.
 */
export function checkCheckpointFormat(
  checkpoint: Pick<PolicyCheckpoint, 'format'>,
  expected: string,
  hint?: string,
): void {
  if (checkpoint.format !== expected)
    throw new InvalidArgumentError({
      argument: 'checkpoint.format',
      message: `expected '${expected}', got '${checkpoint.format}'${hint ? ` (${hint})` : ''}`,
    });
}
