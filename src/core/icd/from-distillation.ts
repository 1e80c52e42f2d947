import type { EpisodeSummary } from '../curation/episodes';
import { InvalidArgumentError } from '../errors';
import type { IcdDemonstration } from '../../ports/icd-scorer';

/**
 * The data loop feeding ICD selection (docs/method.md#icd-selection, #rare-success-distillation):
 * a run's distilled successes (`selectRareSuccesses(...).selected`) become demonstrations for a
 * frozen model's prompt: the question, the answer the judge accepted, the pages the Searcher
 * found as context, and the run and sample they came from. Global indices start at `firstIndex`
 * (after the demonstrations the embedding table already holds).
 */
export function demonstrationsFromDistilled(
  selected: readonly EpisodeSummary[],
  options: { firstIndex?: number } = {},
): IcdDemonstration[] {
  const first = options.firstIndex ?? 0;
  if (!(Number.isInteger(first) && first >= 0))
    throw new InvalidArgumentError({
      argument: 'firstIndex',
      message: `must be an integer >= 0, got ${String(first)}`,
    });
  return selected.map((episode, k) => {
    if (episode.answer.trim().length === 0)
      throw new InvalidArgumentError({
        argument: `selected[${k}].answer`,
        message: `sample '${episode.sampleId}' has no answer to demonstrate`,
      });
    return {
      index: first + k,
      question: episode.query,
      answer: episode.answer,
      ...(episode.retrievedBasenames.length > 0 && {
        context: `pages: ${episode.retrievedBasenames.join(', ')}`,
      }),
      source: { kind: 'searcher-trajectory', runId: episode.runId, sampleId: episode.sampleId },
    };
  });
}
