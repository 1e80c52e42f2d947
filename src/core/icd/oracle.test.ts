import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors';
import { poolOracle, storedOracleAtK, storedQueryOracle, summariseOracle } from './oracle';
import { createIcdScoreCall } from './scoring';
import type { IcdQueryRecord } from './types';
import { demonstration, tableScorer } from '../../../test/support/icd-table-scorer';

const SCORES = [0, 0.3, 0.6, 1];
const query = { id: 4, question: 'q', answers: ['yes'] };
/** Brute force, written apart from the code under test: nested loops over distinct local indices. */
function bruteForce(pool: readonly number[], shots: number, f: (key: string) => number) {
  const all: Array<{ pointer: number[]; accuracy: number }> = [];
  const k = pool.length;
  for (let a = 0; a < k; a++) {
    if (shots === 1) {
      all.push({ pointer: [a], accuracy: f(`${pool[a]}`) });
      continue;
    }
    for (let b = 0; b < k; b++) {
      if (b === a) continue;
      if (shots === 2) {
        all.push({ pointer: [a, b], accuracy: f(`${pool[a]},${pool[b]}`) });
        continue;
      }
      for (let c = 0; c < k; c++)
        if (c !== a && c !== b)
          all.push({ pointer: [a, b, c], accuracy: f(`${pool[a]},${pool[b]},${pool[c]}`) });
    }
  }
  return all;
}

describe('oracle@K over every ordered choice of the pool', () => {
  it('equals the brute-force maximum over all ordered choices of distinct candidates, stopping only at accuracy 1', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.integer({ min: 0, max: 300 }), { minLength: 3, maxLength: 8 }),
        fc.func(fc.constantFrom(...SCORES)),
        fc.integer({ min: 1, max: 3 }),
        async (pool, f, shots) => {
          const scorer = tableScorer((key) => f(key));
          const oracle = await poolOracle(query, pool, {
            demonstration,
            score: createIcdScoreCall(scorer),
            shots,
          });
          const all = bruteForce(pool, shots, (key) => f(key));
          const best = Math.max(...all.map((c) => c.accuracy));
          expect(oracle.best).toBe(best);
          expect(f(oracle.pointer!.map((p) => pool[p]).join(','))).toBe(best);
          // Lexicographic order: the calls are the choices up to the first of accuracy 1, or all of them.
          const firstFull = all.findIndex((c) => c.accuracy >= 1);
          expect(oracle.scoredCalls).toBe(firstFull >= 0 ? firstFull + 1 : all.length);
          expect(scorer.calls).toBe(oracle.scoredCalls);
          if (firstFull >= 0) expect(oracle.pointer).toEqual(all[firstFull]!.pointer);
        },
      ),
      { numRuns: 80 },
    );
  });

  it('a 64-candidate pool with no full pair scores all 4,032 ordered pairs', async () => {
    const pool = Array.from({ length: 64 }, (_, i) => 100 + i);
    const scorer = tableScorer((key) => (key === '163,100' ? 0.6 : 0));
    const oracle = await poolOracle(query, pool, { demonstration, score: createIcdScoreCall(scorer) });
    expect(oracle).toEqual({ best: 0.6, pointer: [63, 0], scoredCalls: 4032 });
  });

  it('summarises the mean best, the share correct and the share at 1; the stored versions see only stored trajectories', () => {
    expect(summariseOracle([1, 0.6, 0, 1])).toEqual({
      queries: 4,
      meanBest: 0.65,
      shareCorrect: 0.75,
      shareFull: 0.5,
    });
    expect(summariseOracle([])).toEqual({ queries: 0, meanBest: 0, shareCorrect: 0, shareFull: 0 });
    const record = (scores: number[]): IcdQueryRecord => ({
      query_id: 1,
      candidate_pool_indices: [5, 6, 7],
      pointer_candidates: scores.map((s) => ({
        pointer: [0, 1],
        vqa_acc_score: s,
        vqa_correct: s > 0 ? 1 : 0,
        gen_method: 'random' as const,
      })),
    });
    expect(storedQueryOracle(record([0, 0.6]))).toBe(0.6);
    expect(storedOracleAtK([record([0]), record([0.3]), record([1, 0])])).toBeCloseTo(2 / 3);
  });

  it('refuses a pool smaller than the shots by name', async () => {
    const score = createIcdScoreCall(tableScorer(() => 0));
    await expect(poolOracle(query, [1], { demonstration, score })).rejects.toThrowError(InvalidArgumentError);
    await expect(poolOracle(query, [1], { demonstration, score })).rejects.toThrow(
      /query 4: a pool of 1 cannot give 2 distinct demonstrations/,
    );
  });
});
