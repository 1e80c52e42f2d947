import { InvalidArgumentError } from '../errors';
import { queryEmbeddingProblem } from './check';
import { dot, embeddingRow, l2Normalise, type EmbeddingTable } from './embeddings';
import { pointerToGlobal } from './index-maps';
import type { MinedPositive } from './miner';
import { storedQueryOracle } from './oracle';
import { isVqaCorrect } from './vqa-accuracy';
import { DEFAULT_ICD_SETTINGS, type IcdQueryRecord, type IcdTrajectory } from './types';

/** One candidate that pool injection replaced. */
export interface InjectionReplacement {
  /** The position in the pool that changed. */
  local: number;
  removed: number;
  added: number;
}

/** A query's record after pool injection, with what was replaced and the positives it added. */
export interface InjectionResult {
  record: IcdQueryRecord;
  replaced: InjectionReplacement[];
  /** Positives whose every demonstration is now in the pool, added as `global_positive_transfer` trajectories. */
  transferred: number;
  /** The best stored trajectory's accuracy before and after (`storedQueryOracle`, not the oracle over the pool). */
  oracleBefore: number;
  oracleAfter: number;
}

/** The default for error rule 4 ("log a warning, do not stop"): visible when the caller gives no `warn`. */
const consoleWarning = (message: string) => console.warn(`searcher-rl: ${message}`);

/**
 * CandidatePoolInjector (docs/method.md#pool-injection): puts mined positives into a query's
 * pool in place of the candidates least similar to the query, never one a trajectory points at,
 * at most `maxInjectPerQuery` (8); the pool keeps its K, every pointer still maps to the global
 * index it mapped to, and what was replaced is recorded. A positive goes in whole or not at all
 * (at the cap, one that needs more room than is left is skipped, and a later one that fits goes
 * in), and a candidate of a positive that is whole in the pool is never replaced. Each positive
 * whose demonstrations are all in the pool becomes a `global_positive_transfer` trajectory. When
 * the query's best stored trajectory (`storedQueryOracle`) does not rise, `warn` is called (error
 * rule 4: a warning, the flow goes on); without a `warn` callback it goes to `console.warn`.
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
    this.warn = options.warn ?? consoleWarning;
  }

  /**
   * Puts the mined positives' demonstrations in the query's pool, replacing the unused candidates
   * least similar to the query, at most `maxInjectPerQuery`; the pool keeps its size.
   */
  injectPositives(
    record: IcdQueryRecord,
    positives: readonly MinedPositive[],
    queryEmbedding: ArrayLike<number>,
  ): InjectionResult {
    const problem = queryEmbeddingProblem(queryEmbedding, this.table.dimensions, record.query_id);
    if (problem) throw new InvalidArgumentError({ argument: 'queryEmbedding', message: problem });
    positives.forEach((positive, i) => {
      const g = positive.global_indices;
      if (!Array.isArray(g) || g.length === 0 || new Set(g).size !== g.length)
        throw new InvalidArgumentError({
          argument: `positives[${i}].global_indices`,
          message: `query ${record.query_id}: expected distinct global indices, got ${JSON.stringify(g)}`,
        });
      for (const index of g) embeddingRow(this.table, index);
    });
    const pool = [...record.candidate_pool_indices];
    const query = l2Normalise(queryEmbedding);
    const local = new Map(pool.map((g, i) => [g, i]));
    // Slots that stay: those a trajectory points at, and those of positives whole in the pool.
    const kept = new Set(record.pointer_candidates.flatMap((t) => t.pointer));
    const whole = (positive: MinedPositive) => positive.global_indices.every((g) => local.has(g));
    for (const positive of positives)
      if (whole(positive)) for (const g of positive.global_indices) kept.add(local.get(g)!);
    // Replaceable slots, least similar first: the cosine, so that a table whose rows are not unit
    // length (built by hand rather than by createEmbeddingTable) orders them the same.
    const slots = pool
      .map((g, slot) => ({ slot, similarity: dot(query, l2Normalise(embeddingRow(this.table, g))) }))
      .filter((s) => !kept.has(s.slot))
      .sort((a, b) => a.similarity - b.similarity || a.slot - b.slot)
      .map((s) => s.slot);
    const replaced: InjectionReplacement[] = [];
    for (const positive of positives) {
      const members = positive.global_indices;
      const missing = members.filter((g) => !local.has(g));
      const present = members.filter((g) => local.has(g)).map((g) => local.get(g)!);
      const free = slots.filter((slot) => !kept.has(slot) && !present.includes(slot));
      if (replaced.length + missing.length > this.maxInjectPerQuery || missing.length > free.length) continue;
      for (const slot of present) kept.add(slot);
      missing.forEach((g, k) => {
        const slot = free[k]!;
        replaced.push({ local: slot, removed: pool[slot]!, added: g });
        local.delete(pool[slot]!);
        pool[slot] = g;
        local.set(g, slot);
        kept.add(slot);
      });
    }
    const trajectories: IcdTrajectory[] = record.pointer_candidates.map((t) => ({
      ...t,
      pointer: [...t.pointer],
      pointer_global: pointerToGlobal(t.pointer, pool),
    }));
    let transferred = 0;
    const seen = new Set<string>();
    for (const positive of positives) {
      const key = positive.global_indices.join(',');
      if (!whole(positive) || seen.has(key)) continue;
      seen.add(key);
      trajectories.push({
        pointer: positive.global_indices.map((g) => local.get(g)!),
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
      pointer_candidates: trajectories,
    };
    const oracleBefore = storedQueryOracle(record);
    const oracleAfter = storedQueryOracle(result);
    if (oracleAfter <= oracleBefore)
      this.warn(
        `query ${record.query_id}: oracle@${pool.length} did not rise after injection (best stored trajectory ${oracleBefore} -> ${oracleAfter}${oracleBefore >= 1 ? ', already the maximum' : ''}; ${replaced.length} candidates replaced)`,
      );
    return { record: result, replaced, transferred, oracleBefore, oracleAfter };
  }
}
