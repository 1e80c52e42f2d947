import { InvalidArgumentError } from '../errors';
import { dot, embeddingRow, l2Normalise, type EmbeddingTable } from './embeddings';
import { pointerToGlobal } from './index-maps';
import type { MinedPositive } from './miner';
import { isVqaCorrect } from './vqa-accuracy';
import { DEFAULT_ICD_SETTINGS, type IcdQueryRecord, type IcdTrajectory } from './types';

export interface InjectionReplacement {
  /** The position in the pool that changed. */
  local: number;
  removed: number;
  added: number;
}

export interface InjectionResult {
  record: IcdQueryRecord;
  replaced: InjectionReplacement[];
  /** Positives whose every demonstration is now in the pool, added as `global_positive_transfer` trajectories. */
  transferred: number;
  oracleBefore: number;
  oracleAfter: number;
}

/** The best accuracy any stored trajectory of the query reaches: its oracle over the known choices. */
export function queryOracle(record: IcdQueryRecord): number {
  return record.pointer_candidates.reduce((best, t) => Math.max(best, t.vqa_acc_score), 0);
}

/** oracle@K: the share of queries with at least one correct trajectory in their pool (docs/method.md#pool-injection). */
export function oracleAtK(records: readonly IcdQueryRecord[]): number {
  if (records.length === 0) return 0;
  return records.filter((r) => r.pointer_candidates.some((t) => t.vqa_correct === 1)).length / records.length;
}

/**
 * CandidatePoolInjector (docs/method.md#pool-injection): puts mined positives into a query's
 * pool in place of the candidates least similar to the query, never one a trajectory points at,
 * at most `maxInjectPerQuery` (8); the pool keeps its K, every pointer still maps to the global
 * index it mapped to, and what was replaced is recorded. A positive whose demonstrations all end
 * up in the pool becomes a `global_positive_transfer` trajectory. When the query's oracle does
 * not rise, `warn` is called (a warning, not an error: the flow goes on).
 */
export class CandidatePoolInjector {
  readonly maxInjectPerQuery: number;
  private readonly table: EmbeddingTable;
  private readonly warn: (message: string) => void;

  constructor(options: {
    table: EmbeddingTable;
    maxInjectPerQuery?: number;
    warn?: (message: string) => void;
  }) {
    const max = options.maxInjectPerQuery ?? DEFAULT_ICD_SETTINGS.maxInjectPerQuery;
    if (!(Number.isInteger(max) && max >= 0))
      throw new InvalidArgumentError({
        argument: 'maxInjectPerQuery',
        message: `must be an integer >= 0, got ${String(max)}`,
      });
    this.maxInjectPerQuery = max;
    this.table = options.table;
    this.warn = options.warn ?? (() => undefined);
  }

  injectPositives(
    record: IcdQueryRecord,
    positives: readonly MinedPositive[],
    queryEmbedding: ArrayLike<number>,
  ): InjectionResult {
    const pool = [...record.candidate_pool_indices];
    const query = l2Normalise(queryEmbedding);
    const pointed = new Set(record.pointer_candidates.flatMap((t) => t.pointer));
    // Replaceable slots, least similar first.
    const slots = pool
      .map((g, local) => ({ local, similarity: dot(query, embeddingRow(this.table, g)) }))
      .filter((s) => !pointed.has(s.local))
      .sort((a, b) => a.similarity - b.similarity || a.local - b.local);
    const wanted: number[] = [];
    for (const positive of positives) {
      for (const g of positive.global_indices) {
        embeddingRow(this.table, g);
        if (!pool.includes(g) && !wanted.includes(g)) wanted.push(g);
      }
    }
    const replaced: InjectionReplacement[] = [];
    for (const g of wanted) {
      if (replaced.length >= this.maxInjectPerQuery || replaced.length >= slots.length) break;
      const slot = slots[replaced.length]!;
      replaced.push({ local: slot.local, removed: pool[slot.local]!, added: g });
      pool[slot.local] = g;
    }
    const local = new Map(pool.map((g, i) => [g, i]));
    const kept: IcdTrajectory[] = record.pointer_candidates.map((t) => ({
      ...t,
      pointer: [...t.pointer],
      pointer_global: pointerToGlobal(t.pointer, pool),
    }));
    let transferred = 0;
    for (const positive of positives) {
      if (!positive.global_indices.every((g) => local.has(g))) continue;
      const pointer = positive.global_indices.map((g) => local.get(g)!);
      kept.push({
        pointer,
        pointer_global: [...positive.global_indices],
        vqa_correct: isVqaCorrect(positive.acc_score),
        vqa_acc_score: positive.acc_score,
        gen_method: 'global_positive_transfer',
      });
      transferred++;
    }
    const result: IcdQueryRecord = {
      query_id: record.query_id,
      candidate_pool_indices: pool,
      pointer_candidates: kept,
    };
    const oracleBefore = queryOracle(record);
    const oracleAfter = queryOracle(result);
    if (oracleAfter <= oracleBefore)
      this.warn(
        `query ${record.query_id}: oracle@${pool.length} did not rise after injection (${oracleBefore} -> ${oracleAfter}; ${replaced.length} candidates replaced)`,
      );
    return { record: result, replaced, transferred, oracleBefore, oracleAfter };
  }
}
