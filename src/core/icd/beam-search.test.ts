import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError, ProviderCallError } from '../errors';
import type { IcdScorer } from '../../ports/icd-scorer';
import { beamSearchDemonstrations } from './beam-search';
import { createEmbeddingTable, similarities, topK } from './embeddings';
import { createIcdScoreCall } from './scoring';
import { demonstration, tableScorer } from '../../../test/support/icd-table-scorer';

const SCORES = [0, 0.3, 0.6, 1];
const query = { id: 0, question: 'q', answers: ['yes'] };
/** Every ordered choice of `shots` distinct local indices of a pool of `k`. */
function orderedChoices(k: number, shots: number): number[][] {
  if (shots === 0) return [[]];
  return orderedChoices(k, shots - 1).flatMap((prefix) =>
    Array.from({ length: k }, (_, i) => i)
      .filter((i) => !prefix.includes(i))
      .map((i) => [...prefix, i]),
  );
}

const pools = fc.uniqueArray(fc.integer({ min: 0, max: 500 }), { minLength: 2, maxLength: 9 });
const accuracies = fc.func(fc.constantFrom(...SCORES));

describe('beam search scored by the frozen model (Lever-LM data generation)', () => {
  it('with a width >= the number of candidates it scores every ordered pair, K + K(K-1) calls, and finds the best pair', async () => {
    await fc.assert(
      fc.asyncProperty(pools, accuracies, fc.integer({ min: 0, max: 5 }), async (pool, f, extra) => {
        const scorer = tableScorer((key) => f(key));
        const k = pool.length;
        const result = await beamSearchDemonstrations(query, pool, {
          demonstration,
          score: createIcdScoreCall(scorer),
          beamWidth: k + extra,
          shots: 2,
        });
        const best = Math.max(...orderedChoices(k, 2).map((c) => f(c.map((p) => pool[p]).join(','))));
        expect(result.beams[0]!.accuracy).toBe(best);
        expect(result.scoredCalls).toBe(k + k * (k - 1));
        expect(scorer.calls).toBe(result.scoredCalls);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps at most `beamWidth` sequences of `shots` distinct local indices, best first, each with the accuracy the model gives it; calls follow the beam sizes', async () => {
    await fc.assert(
      fc.asyncProperty(
        pools,
        accuracies,
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 1, max: 3 }),
        async (pool, f, beamWidth, shots) => {
          fc.pre(pool.length >= shots);
          const scorer = tableScorer((key) => f(key));
          const result = await beamSearchDemonstrations(query, pool, {
            demonstration,
            score: createIcdScoreCall(scorer),
            beamWidth,
            shots,
          });
          const k = pool.length;
          let expected = 0;
          let beams = 1;
          for (let s = 0; s < shots; s++) {
            expected += beams * (k - s);
            beams = Math.min(beamWidth, beams * (k - s));
          }
          expect(result.scoredCalls).toBe(expected);
          expect(scorer.calls).toBe(expected);
          expect(result.beams).toHaveLength(beams);
          for (const [i, beam] of result.beams.entries()) {
            expect(beam.pointer).toHaveLength(shots);
            expect(new Set(beam.pointer).size).toBe(shots);
            for (const p of beam.pointer) expect(p >= 0 && p < k).toBe(true);
            expect(beam.accuracy).toBe(f(beam.pointer.map((p) => pool[p]).join(',')));
            if (i > 0) expect(beam.accuracy).toBeLessThanOrEqual(result.beams[i - 1]!.accuracy);
          }
        },
      ),
      { numRuns: 80 },
    );
  });

  it('a wider beam finds the pair a greedy search (width 1) misses; ties go to the earlier sequence, then the lower index', async () => {
    // c0 alone is the best first shot, but only c1 then c2 answers fully.
    const accuracy: Record<string, number> = { '10': 0.6, '11': 0.3, '12': 0.3, '11,12': 1 };
    const scorer = tableScorer((key) => accuracy[key] ?? 0);
    const options = { demonstration, score: createIcdScoreCall(scorer), shots: 2 };
    const pool = [10, 11, 12];
    const greedy = await beamSearchDemonstrations(query, pool, { ...options, beamWidth: 1 });
    expect(greedy.beams).toEqual([{ pointer: [0, 1], accuracy: 0 }]);
    expect(greedy.scoredCalls).toBe(3 + 2);
    const wide = await beamSearchDemonstrations(query, pool, { ...options, beamWidth: 2 });
    expect(wide.beams).toEqual([
      { pointer: [1, 2], accuracy: 1 },
      { pointer: [0, 1], accuracy: 0 },
    ]);
    expect(wide.scoredCalls).toBe(3 + 2 * 2);
  });

  it('finds the best pair on a small pool where cosine top-2 does not (the two most similar candidates do not help), within its width and shots, its calls counted', async () => {
    // Candidates 0-5 of the table; the query points at 0 and 1, which look like it but do not help:
    // the model answers fully only when shown 4 then 3, partly with 4 alone first.
    const table = createEmbeddingTable([
      [1, 0.1, 0],
      [1, 0.2, 0],
      [0.2, 1, 0],
      [0, 0.3, 1],
      [0.1, 0, 1],
      [0, 1, 0.2],
    ]);
    const queryVector = [1, 0.15, 0];
    const pool = [2, 0, 5, 4, 1, 3];
    const cosineTop2 = topK(similarities(table, queryVector), 2).map((g) => pool.indexOf(g));
    expect(cosineTop2.map((p) => pool[p])).toEqual([1, 0]);
    const accuracy: Record<string, number> = { '4': 0.3, '4,3': 1, '0,1': 0, '1,0': 0 };
    const scorer = tableScorer((key) => accuracy[key] ?? 0);
    const score = createIcdScoreCall(scorer);
    expect(
      (
        await score(
          query,
          cosineTop2.map((p) => demonstration(pool[p]!)),
        )
      ).accuracy,
    ).toBe(0);
    scorer.calls = 0;
    const result = await beamSearchDemonstrations(query, pool, {
      demonstration,
      score,
      beamWidth: 2,
      shots: 2,
    });
    expect(result.beams[0]).toEqual({ pointer: [pool.indexOf(4), pool.indexOf(3)], accuracy: 1 });
    expect(result.beams).toHaveLength(2);
    expect(result.scoredCalls).toBe(6 + 2 * 5);
    expect(scorer.calls).toBe(result.scoredCalls);
    // Three shots: three distinct candidates per beam, 6 + 2 x 5 + 2 x 4 calls.
    const three = await beamSearchDemonstrations(query, pool, {
      demonstration,
      score,
      beamWidth: 2,
      shots: 3,
    });
    expect(three.beams.every((b) => b.pointer.length === 3 && new Set(b.pointer).size === 3)).toBe(true);
    expect(three.scoredCalls).toBe(6 + 2 * 5 + 2 * 4);
  });

  it('goes through the reliable call (a busy scorer is retried) and refuses a bad width or a pool too small by name', async () => {
    let failures = 1;
    const inner = tableScorer(() => 1);
    const scorer: IcdScorer = {
      ...inner,
      async doScore(q, demos) {
        if (failures-- > 0)
          throw new ProviderCallError({ port: 'icdScorer', provider: 'test', status: 503, message: 'busy' });
        return inner.doScore(q, demos);
      },
    };
    const score = createIcdScoreCall(scorer, { initialRetryDelayMs: 1 }, { random: () => 0 });
    const result = await beamSearchDemonstrations(query, [1, 2, 3], { demonstration, score, beamWidth: 2 });
    expect(result.scoredCalls).toBe(3 + 2 * 2);
    expect(result.beams[0]).toEqual({ pointer: [0, 1], accuracy: 1 });
    for (const beamWidth of [0, 1.5, Number.NaN])
      await expect(
        beamSearchDemonstrations(query, [1, 2, 3], { demonstration, score, beamWidth }),
      ).rejects.toThrowError(InvalidArgumentError);
    await expect(beamSearchDemonstrations(query, [1, 2], { demonstration, score, shots: 3 })).rejects.toThrow(
      /query 0: a pool of 2 cannot give 3 distinct demonstrations/,
    );
  });
});
