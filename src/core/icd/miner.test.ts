import { describe, expect, it } from 'vitest';
import { PortOutputError, ProviderCallError } from '../errors';
import { createRandom } from '../random';
import type { IcdScorer } from '../../ports/icd-scorer';
import { createEmbeddingTable } from './embeddings';
import { GlobalPositiveMiner } from './miner';
import { createIcdScoreCall } from './scoring';
import { selectorGrpoLoss } from './selector-grpo';
import { demonstration } from '../../../test/support/icd-table-scorer';

const table = createEmbeddingTable(
  Array.from({ length: 40 }, (_, i) => [Math.cos(i / 6), Math.sin(i / 6), 0.1]),
);
const query = { id: 0, question: 'q', answers: ['yes'] };

describe('GlobalPositiveMiner', () => {
  it('scores at most maxEvalPairs pairs from the top-K outside the pool, through the reliable call, and returns the positives best first', async () => {
    let calls = 0;
    let failures = 1;
    const scorer: IcdScorer = {
      specificationVersion: 'v1',
      provider: 'test',
      async doScore(_q, demos) {
        calls++;
        if (failures-- > 0)
          throw new ProviderCallError({ port: 'icdScorer', provider: 'test', status: 503, message: 'busy' });
        const hit = demos.some((d) => d.index === 3);
        return { answer: hit ? 'yes' : 'no', accuracy: hit ? (demos[0]!.index === 3 ? 1 : 0.6) : 0 };
      },
    };
    const score = createIcdScoreCall(scorer, { initialRetryDelayMs: 1 }, { random: () => 0 });
    const miner = new GlobalPositiveMiner({ table, demonstration, score, searchTopK: 10, maxEvalPairs: 20 });
    const positives = await miner.minePositivesForQuery(query, [1, 0, 0.1], [0, 1, 2], createRandom(1));
    expect(miner.evaluatedPairs).toBe(20);
    expect(calls).toBe(21);
    expect(positives.length).toBeGreaterThan(0);
    for (const p of positives) {
      expect(p.global_indices).toContain(3);
      expect(p.global_indices.some((g) => [0, 1, 2].includes(g))).toBe(false);
    }
    expect(positives.map((p) => p.acc_score)).toEqual(
      [...positives.map((p) => p.acc_score)].sort((a, b) => b - a),
    );
  });

  it('treats an accuracy outside [0, 1] as a failed call', async () => {
    const scorer: IcdScorer = {
      specificationVersion: 'v1',
      provider: 'bad',
      doScore: async () => ({ answer: 'x', accuracy: 3 }),
    };
    const error = await createIcdScoreCall(scorer)(query, []).catch((e: unknown) => e);
    expect(PortOutputError.isInstance(error)).toBe(true);
  });
});

describe('selectorGrpoLoss', () => {
  it('gives -A / (shots in the batch) per shot, zero for a tied group, and uses one group per query', () => {
    const result = selectorGrpoLoss({
      shotLogProbs: [
        [-1, -1],
        [-2, -2],
        [-1, -1],
        [-1, -1],
      ],
      rewards: [1, 0, 0.3, 0.3],
      groupIds: ['a', 'a', 'b', 'b'],
    });
    expect(result.advantages[0]).toBeCloseTo(1);
    expect(result.advantages[1]).toBeCloseTo(-1);
    expect(result.advantages.slice(2)).toEqual([null, null]);
    expect(result.usableGroups).toBe(1);
    expect(result.gradShotLogProbs[0]![0]).toBeCloseTo(-1 / 4);
    expect(result.gradShotLogProbs[1]![1]).toBeCloseTo(1 / 4);
    expect(result.gradShotLogProbs[2]).toEqual([0, 0]);
  });
});
