import { InvalidArgumentError } from '../errors';
import type { IcdDemonstration, IcdQuery } from '../../ports/icd-scorer';
import { mean } from '../stats';
import { checkShots } from './check';
import type { IcdScoreCall } from './scoring';
import { DEFAULT_ICD_SETTINGS, type IcdQueryRecord } from './types';

/** A query's oracle over its pool: the best accuracy of any ordered choice of distinct candidates. */
export interface PoolOracle {
  best: number;
  /** The first choice (local indices, lexicographic order) that reaches `best`; null for an empty enumeration. */
  pointer: number[] | null;
  /** Calls to the frozen model: the enumeration stops at the first choice of accuracy 1. */
  scoredCalls: number;
}

/**
 * oracle@K over every choice (docs/method.md#oracle-at-k): the frozen model scores every ordered
 * choice of `shots` distinct candidates of the pool (K * (K - 1) = 4,032 pairs for K = 64), in
 * lexicographic order of local indices, and the best accuracy is the query's oracle. No choice
 * scores above 1, so the enumeration stops at the first choice of accuracy 1 and the best is
 * exact with fewer calls. A failed score call (after the reliable caller's retries) fails it.
 */
export async function poolOracle(
  query: IcdQuery,
  pool: readonly number[],
  options: {
    demonstration: (globalIndex: number) => IcdDemonstration;
    score: IcdScoreCall;
    shots?: number;
    signal?: AbortSignal;
  },
): Promise<PoolOracle> {
  const shots = checkShots(options.shots ?? DEFAULT_ICD_SETTINGS.shots);
  if (pool.length < shots)
    throw new InvalidArgumentError({
      argument: 'pool',
      message: `query ${query.id}: a pool of ${pool.length} cannot give ${shots} distinct demonstrations`,
    });
  let best = 0;
  let bestPointer: number[] | null = null;
  let scoredCalls = 0;
  const pointer: number[] = [];
  const used = new Set<number>();
  // Depth-first over ordered tuples of distinct local indices; returns true to stop (accuracy 1 found).
  const visit = async (): Promise<boolean> => {
    if (pointer.length === shots) {
      const { accuracy } = await options.score(
        query,
        pointer.map((p) => options.demonstration(pool[p]!)),
        options.signal,
      );
      scoredCalls++;
      if (bestPointer === null || accuracy > best) {
        best = accuracy;
        bestPointer = [...pointer];
      }
      return accuracy >= 1;
    }
    for (let local = 0; local < pool.length; local++) {
      if (used.has(local)) continue;
      pointer.push(local);
      used.add(local);
      const stop = await visit();
      used.delete(local);
      pointer.pop();
      if (stop) return true;
    }
    return false;
  };
  await visit();
  return { best, pointer: bestPointer, scoredCalls };
}

/** oracle@K over a set of queries, from each query's `best` (docs/method.md#oracle-at-k). */
export interface OracleSummary {
  queries: number;
  /** Mean over the queries of their best accuracy: the ceiling of any selector's mean accuracy on these pools. */
  meanBest: number;
  /** Share of queries whose pool holds a choice the model answers correctly (accuracy > 0). */
  shareCorrect: number;
  /** Share of queries whose pool holds a choice of accuracy 1. */
  shareFull: number;
}

/** oracle@K over the queries from each query's best accuracy. */
export function summariseOracle(bests: readonly number[]): OracleSummary {
  const n = bests.length;
  if (n === 0) return { queries: 0, meanBest: 0, shareCorrect: 0, shareFull: 0 };
  return {
    queries: n,
    meanBest: mean(bests),
    shareCorrect: bests.filter((b) => b > 0).length / n,
    shareFull: bests.filter((b) => b >= 1).length / n,
  };
}

/**
 * The best accuracy among a query's stored trajectories. It sees only the choices someone scored
 * and kept, so it is a lower bound of the query's `poolOracle`, not the oracle over the pool.
 */
export function storedQueryOracle(record: IcdQueryRecord): number {
  return record.pointer_candidates.reduce((best, t) => Math.max(best, t.vqa_acc_score), 0);
}

/**
 * The share of queries with at least one correct (accuracy > 0) stored trajectory. Like
 * `storedQueryOracle` it counts only stored choices (a lower bound of `summariseOracle`'s
 * `shareCorrect`); it is what can be said of a data file without the frozen model.
 */
export function storedOracleAtK(records: readonly IcdQueryRecord[]): number {
  if (records.length === 0) return 0;
  return records.filter((r) => r.pointer_candidates.some((t) => t.vqa_correct === 1)).length / records.length;
}
