import { InvalidArgumentError } from '../errors';
import type { Random } from '../random';
import type { IcdDemonstration, IcdQuery } from '../../ports/icd-scorer';
import { queryEmbeddingProblem } from './check';
import { similarities, topK, type EmbeddingTable } from './embeddings';
import type { IcdScoreCall } from './scoring';
import { DEFAULT_ICD_SETTINGS } from './types';

/**
 * A sequence of demonstrations the frozen model answers the query fully right with (accuracy 1).
 */
export interface MinedPositive {
  /** The demonstrations in prompt order, as global indices. */
  global_indices: number[];
  acc_score: number;
}

/**
 * What `GlobalPositiveMiner` needs: the embedding table, the demonstrations, the scoring call and
 * its budgets.
 */
export interface GlobalPositiveMinerOptions {
  table: EmbeddingTable;
  /** The demonstration behind each global index (what the frozen model is shown). */
  demonstration: (globalIndex: number) => IcdDemonstration;
  score: IcdScoreCall;
  searchTopK?: number;
  maxEvalPairs?: number;
  shots?: number;
}

/**
 * GlobalPositiveMiner (docs/method.md#pool-injection): for a query, the `searchTopK` (300) rows of
 * the whole table most cosine-similar to it, outside its current pool; from them at most
 * `maxEvalPairs` (50) ordered pairs, drawn without repetition from `random`, each scored by the
 * frozen model through the reliable score call. Returns the positives (accuracy > 0), best first.
 */
export class GlobalPositiveMiner {
  private readonly options: Required<Omit<GlobalPositiveMinerOptions, 'table' | 'demonstration' | 'score'>> &
    GlobalPositiveMinerOptions;
  /** Scored pairs in all (for the cost report). */
  evaluatedPairs = 0;

  constructor(options: GlobalPositiveMinerOptions) {
    const searchTopK = options.searchTopK ?? DEFAULT_ICD_SETTINGS.searchTopK;
    const maxEvalPairs = options.maxEvalPairs ?? DEFAULT_ICD_SETTINGS.maxEvalPairs;
    const shots = options.shots ?? DEFAULT_ICD_SETTINGS.shots;
    for (const [name, v] of [
      ['searchTopK', searchTopK],
      ['maxEvalPairs', maxEvalPairs],
      ['shots', shots],
    ] as const) {
      if (!(Number.isInteger(v) && v >= 1))
        throw new InvalidArgumentError({
          argument: name,
          message: `must be an integer >= 1, got ${String(v)}`,
        });
    }
    this.options = { ...options, searchTopK, maxEvalPairs, shots };
  }

  /**
   * Scores up to `maxEvalPairs` sequences drawn from the `searchTopK` candidates most similar to
   * the query outside its pool, and returns those the frozen model answers fully right with.
   */
  async minePositivesForQuery(
    query: IcdQuery,
    queryEmbedding: ArrayLike<number>,
    currentPool: readonly number[],
    random: Random,
    signal?: AbortSignal,
  ): Promise<MinedPositive[]> {
    const { table, searchTopK, maxEvalPairs, shots } = this.options;
    const problem = queryEmbeddingProblem(queryEmbedding, table.dimensions, query.id);
    if (problem) throw new InvalidArgumentError({ argument: 'queryEmbedding', message: problem });
    const exclude = new Set(currentPool);
    const shortlist = topK(similarities(table, queryEmbedding), searchTopK, exclude);
    if (shortlist.length < shots) return [];
    const seen = new Set<string>();
    const tuples: number[][] = [];
    // Distinct ordered tuples; the cap on attempts keeps a tiny shortlist from looping.
    for (let attempt = 0; tuples.length < maxEvalPairs && attempt < maxEvalPairs * 20; attempt++) {
      const picked: number[] = [];
      while (picked.length < shots) {
        const g = shortlist[random.nextInt(shortlist.length)]!;
        if (!picked.includes(g)) picked.push(g);
      }
      const key = picked.join(',');
      if (seen.has(key)) continue;
      seen.add(key);
      tuples.push(picked);
    }
    const positives: MinedPositive[] = [];
    for (const tuple of tuples) {
      const result = await this.options.score(
        query,
        tuple.map((g) => this.options.demonstration(g)),
        signal,
      );
      this.evaluatedPairs++;
      if (result.accuracy > 0) positives.push({ global_indices: tuple, acc_score: result.accuracy });
    }
    return positives.sort((a, b) => b.acc_score - a.acc_score);
  }
}
