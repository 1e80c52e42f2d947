import { InvalidArgumentError } from '../errors';
import type { IcdDemonstration, IcdQuery } from '../../ports/icd-scorer';
import { checkShots } from './check';
import type { IcdScoreCall } from './scoring';
import { DEFAULT_ICD_SETTINGS } from './types';

/** One sequence the beam search kept: local indices in prompt order, and the frozen model's accuracy with them. */
export interface IcdBeam {
  pointer: number[];
  accuracy: number;
}

/** The sequences a beam search kept, best first, and the frozen-model calls it made. */
export interface IcdBeamSearchResult {
  /** At most `beamWidth` sequences of `shots` candidates, best first. */
  beams: IcdBeam[];
  /** Calls to the frozen model this search made. */
  scoredCalls: number;
}

/**
 * What `beamSearchDemonstrations` needs: the demonstrations, the scoring call, and its width and
 * shots.
 */
export interface IcdBeamSearchOptions {
  /** The demonstration behind each global index (what the frozen model is shown). */
  demonstration: (globalIndex: number) => IcdDemonstration;
  score: IcdScoreCall;
  /** Sequences kept after each shot (Lever-LM's `beam_size`; default 5). */
  beamWidth?: number;
  /** Demonstrations per prompt (Lever-LM's `few_shot_num`; default 2). */
  shots?: number;
  signal?: AbortSignal;
}

/**
 * Beam search over a query's pool scored by the frozen model, as Lever-LM's data generation
 * (`generate_data.py`, `generate_single_sample_icd`) does it (docs/method.md#beam-search): start
 * from the empty sequence; at each shot, every kept sequence is extended by every candidate not
 * already in it, each extension is scored by the frozen model on the query (the accuracy with
 * those demonstrations, in that order), and the `beamWidth` best extensions are kept. Lever-LM
 * keeps each sequence's top `beamWidth` and then the top `beamWidth` of their union, which under
 * one total order is the top `beamWidth` of all extensions, as here. Differences, both said in
 * the docs: the score is the accuracy the `IcdScorer` gives (Lever-LM's InfoScore is the gain in
 * the answer's log-likelihood; the seed's RL data grades by VQA accuracy), and a new candidate is
 * appended (Lever-LM prepends it), so a beam's prefix is the selector's first shots. Ties go to
 * the earlier sequence, then the lower local index, so a search is reproducible.
 *
 * It reads the query's answers (through the scorer), so it makes labels for training queries; on
 * a held-out query it is a ceiling that costs about K + (shots - 1) * beamWidth * K calls, not a selector.
 * A failed score call (after the reliable caller's retries) fails the search.
 */
export async function beamSearchDemonstrations(
  query: IcdQuery,
  pool: readonly number[],
  options: IcdBeamSearchOptions,
): Promise<IcdBeamSearchResult> {
  const beamWidth = options.beamWidth ?? DEFAULT_ICD_SETTINGS.beamWidth;
  if (!(Number.isInteger(beamWidth) && beamWidth >= 1))
    throw new InvalidArgumentError({
      argument: 'beamWidth',
      message: `must be an integer >= 1, got ${String(beamWidth)}`,
    });
  const shots = checkShots(options.shots ?? DEFAULT_ICD_SETTINGS.shots);
  if (pool.length < shots)
    throw new InvalidArgumentError({
      argument: 'pool',
      message: `query ${query.id}: a pool of ${pool.length} cannot give ${shots} distinct demonstrations`,
    });
  let beams: IcdBeam[] = [{ pointer: [], accuracy: 0 }];
  let scoredCalls = 0;
  for (let shot = 0; shot < shots; shot++) {
    const extensions: IcdBeam[] = [];
    for (const beam of beams) {
      const used = new Set(beam.pointer);
      for (let local = 0; local < pool.length; local++) {
        if (used.has(local)) continue;
        const pointer = [...beam.pointer, local];
        const result = await options.score(
          query,
          pointer.map((p) => options.demonstration(pool[p]!)),
          options.signal,
        );
        scoredCalls++;
        extensions.push({ pointer, accuracy: result.accuracy });
      }
    }
    // Array.prototype.sort is stable: equal accuracies keep generation order (earlier beam, lower index).
    beams = extensions.sort((a, b) => b.accuracy - a.accuracy).slice(0, beamWidth);
  }
  return { beams, scoredCalls };
}
