import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DatasetValidationError, InvalidArgumentError } from '../errors';
import { createRandom } from '../random';
import { TrajectoryQualityController } from './controller';
import { createIcdDatasetView } from './dataset-view';
import { createEmbeddingTable } from './embeddings';
import { globalToLocal, localToGlobal, validateIcdRecords } from './index-maps';
import { CandidatePoolInjector } from './injector';
import { storedOracleAtK } from './oracle';
import { normaliseIcdPools } from './normalise';
import { parseIcdRecords, parseIcdText } from './parse';
import { isVqaCorrect, vqaSoftAccuracy } from './vqa-accuracy';
import type { IcdQueryRecord, IcdTrajectory } from './types';

const TABLE_ROWS = 200;
const D = 8;
const table = (() => {
  const random = createRandom(3);
  return createEmbeddingTable(
    Array.from({ length: TABLE_ROWS }, () => Array.from({ length: D }, () => random.nextNormal())),
  );
})();
const queryEmbedding = (id: number) => Array.from({ length: D }, (_, k) => Math.sin(id * 7 + k));

const SCORES = [0, 0.3, 0.6, 0.9, 1];
const trajectory = (k: number) =>
  fc
    .record({
      pointer: fc.uniqueArray(fc.integer({ min: 0, max: k - 1 }), { minLength: 2, maxLength: 2 }),
      vqa_acc_score: fc.constantFrom(...SCORES),
      gen_method: fc.constantFrom('beam' as const, 'sample' as const, 'random' as const),
    })
    .map((t) => ({ ...t, vqa_correct: isVqaCorrect(t.vqa_acc_score) }) as IcdTrajectory);

/** Raw data whose pools are not K long ("K not fixed"): sizes 4..90 of distinct global indices. */
const rawRecord = (id: number) =>
  fc.integer({ min: 4, max: 90 }).chain((k) =>
    fc.record({
      query_id: fc.constant(id),
      candidate_pool_indices: fc.uniqueArray(fc.integer({ min: 0, max: TABLE_ROWS - 1 }), {
        minLength: k,
        maxLength: k,
      }),
      pointer_candidates: fc.array(trajectory(k), { minLength: 1, maxLength: 6 }),
    }),
  );
const rawDataset = fc
  .integer({ min: 1, max: 5 })
  .chain((n) => fc.tuple(...Array.from({ length: n }, (_, i) => rawRecord(i))));
const positive = fc.record({
  global_indices: fc.uniqueArray(fc.integer({ min: 0, max: TABLE_ROWS - 1 }), { minLength: 2, maxLength: 2 }),
  acc_score: fc.constantFrom(0.3, 0.6, 1),
});

describe('the six correctness properties (docs/method.md#correctness-properties)', () => {
  it('1-3: normalising raw data of any K gives pools of K, pointers in range, each mapping to the same global index', () => {
    fc.assert(
      fc.property(rawDataset, fc.constantFrom(16, 64), (raw, poolSize) => {
        const before = raw.map((r) =>
          r.pointer_candidates.map((t) => t.pointer.map((p) => r.candidate_pool_indices[p])),
        );
        const used = raw.map((r) => new Set(r.pointer_candidates.flatMap((t) => t.pointer)).size);
        fc.pre(used.every((u) => u <= poolSize));
        const { records } = normaliseIcdPools(raw, { poolSize, table, queryEmbedding });
        records.forEach((r, i) => {
          expect(r.candidate_pool_indices).toHaveLength(poolSize);
          r.pointer_candidates.forEach((t, j) => {
            for (const p of t.pointer) expect(p >= 0 && p < poolSize).toBe(true);
            expect(t.pointer.map((p) => localToGlobal(p, r.candidate_pool_indices))).toEqual(before[i]![j]);
            expect(t.pointer_global).toEqual(before[i]![j]);
          });
        });
      }),
      { numRuns: 60 },
    );
  });

  it('1, 3 and 4: injection keeps K, every pointer maps to its old global index, at most maxInjectPerQuery are replaced', () => {
    fc.assert(
      fc.property(
        rawRecord(0),
        fc.array(positive, { maxLength: 12 }),
        fc.integer({ min: 0, max: 10 }),
        (raw, positives, maxInjectPerQuery) => {
          const [record] = normaliseIcdPools([raw], { poolSize: 64, table, queryEmbedding }).records;
          const injector = new CandidatePoolInjector({ table, maxInjectPerQuery });
          const result = injector.injectPositives(record!, positives, queryEmbedding(0));
          const pool = result.record.candidate_pool_indices;
          expect(pool).toHaveLength(64);
          expect(new Set(pool).size).toBe(64);
          expect(result.replaced.length).toBeLessThanOrEqual(maxInjectPerQuery);
          record!.pointer_candidates.forEach((t, j) => {
            expect(result.record.pointer_candidates[j]!.pointer.map((p) => pool[p])).toEqual(
              t.pointer_global,
            );
          });
          for (const t of result.record.pointer_candidates)
            expect(t.pointer.map((p) => pool[p])).toEqual(t.pointer_global);
          for (const r of result.replaced) expect(pool[r.local]).toBe(r.added);
          validateIcdRecords([result.record], { poolSize: 64, embeddingCount: TABLE_ROWS });
        },
      ),
      { numRuns: 80 },
    );
  });

  it('5: every committed trajectory raises max(acc_score) or the number of distinct acc_score values', () => {
    const controller = new TrajectoryQualityController();
    fc.assert(
      fc.property(fc.array(trajectory(64), { maxLength: 30 }), (sequence) => {
        const committed: IcdTrajectory[] = [];
        for (const t of controller.commitOnImprove(sequence)) {
          const max = Math.max(-Infinity, ...committed.map((c) => c.vqa_acc_score));
          const distinct = new Set(committed.map((c) => c.vqa_acc_score)).size;
          expect(
            t.vqa_acc_score > max || new Set([...committed, t].map((c) => c.vqa_acc_score)).size > distinct,
          ).toBe(true);
          committed.push(t);
        }
        // Nothing that would have improved was left out.
        expect(new Set(committed.map((c) => c.vqa_acc_score))).toEqual(
          new Set(sequence.map((c) => c.vqa_acc_score)),
        );
      }),
    );
  });

  it('6: every query ends with exactly targetTrajectoryCount trajectories, distinct ones before any repeat (issue 41)', () => {
    fc.assert(
      fc.property(
        fc.array(trajectory(64), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 16 }),
        (all, target) => {
          const controller = new TrajectoryQualityController({ targetTrajectoryCount: target });
          const { trajectories: final, repeated } = controller.selectFinal(all);
          const keys = (list: readonly IcdTrajectory[]) => new Set(list.map((t) => t.pointer.join(',')));
          expect(final).toHaveLength(target);
          const used = keys(final).size;
          expect(used).toBe(Math.min(target, keys(all).size));
          expect(repeated).toBe(target - used);
          // While acc-0 trajectories remain unused, positives stay within 4 and partials within 2.
          // A pointer given twice is one trajectory, the better scored (a lower-scored copy is no acc-0 one left).
          const best = new Map<string, number>();
          for (const t of all)
            best.set(t.pointer.join(','), Math.max(best.get(t.pointer.join(',')) ?? -1, t.vqa_acc_score));
          const zerosLeft =
            [...best.values()].filter((v) => v === 0).length >
            keys(final.filter((t) => t.vqa_acc_score === 0)).size;
          if (zerosLeft) {
            expect(final.filter((t) => t.vqa_acc_score >= 1).length).toBeLessThanOrEqual(4);
            expect(
              final.filter((t) => t.vqa_acc_score > 0 && t.vqa_acc_score < 1).length,
            ).toBeLessThanOrEqual(2);
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});

const record = (pool: number[], pointer: number[] = [0, 1]): IcdQueryRecord => ({
  query_id: 5,
  candidate_pool_indices: pool,
  pointer_candidates: [{ pointer, vqa_correct: 1, vqa_acc_score: 1, gen_method: 'beam' }],
});
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => i + from);

describe('error rules and index maps', () => {
  it('a pool of another size names the query and the size', () => {
    const error = (() => {
      try {
        validateIcdRecords([record(range(63))], { poolSize: 64 });
      } catch (e) {
        return e;
      }
    })();
    expect(DatasetValidationError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/query 5: pool size 63 != 64/);
    expect(() => createIcdDatasetView([record(range(63))], { table, queryEmbedding })).toThrow(
      /pool size 63 != 64/,
    );
  });

  it('a pointer out of range names the trajectory; a global index beyond the table says to check consistency', () => {
    expect(() => validateIcdRecords([record(range(64), [3, 64])], { poolSize: 64 })).toThrow(
      /query 5, trajectory 0 \(beam, pointer \[3, 64\]\): index 64 is outside \[0, 63\]/,
    );
    expect(() =>
      validateIcdRecords([record(range(64, 150))], { poolSize: 64, embeddingCount: TABLE_ROWS }),
    ).toThrow(
      /global index 200 is beyond the embedding table \(200 rows\); check that the RL data and the embeddings come from the same dataset/,
    );
  });

  it('localToGlobal and globalToLocal are inverse, with clear errors', () => {
    const pool = [1001, 2034, 7];
    expect(localToGlobal(1, pool)).toBe(2034);
    expect(globalToLocal(2034, pool)).toBe(1);
    expect(() => localToGlobal(3, pool)).toThrowError(InvalidArgumentError);
    expect(() => globalToLocal(5, pool)).toThrow(/global index 5 is not in the candidate pool/);
  });

  it('reads candidate_pool_ids, objects keyed by query id, JSONL, and global pointers given as pointer_global', () => {
    const [a] = parseIcdRecords({
      '12': {
        candidate_pool_ids: [40, 41, 42],
        pointer_candidates: [{ pointer_global: [42, 40], vqa_acc_score: 0.6, gen_method: 'beam' }],
      },
    });
    expect(a).toEqual({
      query_id: 12,
      candidate_pool_indices: [40, 41, 42],
      pointer_candidates: [
        { pointer: [2, 0], pointer_global: [42, 40], vqa_correct: 1, vqa_acc_score: 0.6, gen_method: 'beam' },
      ],
    });
    // Global indices in `pointer` are not guessed to be global (issue 24, item 13): error rule 2.
    expect(() =>
      parseIcdRecords({
        '12': {
          candidate_pool_ids: [40, 41, 42],
          pointer_candidates: [{ pointer: [42, 40], vqa_acc_score: 0.6, gen_method: 'beam' }],
        },
      }),
    ).toThrow(/field 'pointer_candidates\.0\.pointer\.0'.*index 42 is outside \[0, 2\]/);
    const lines = parseIcdText(
      '{"query_id":1,"candidate_pool_indices":[9,8],"pointer_candidates":[{"pointer":[1,0],"pointer_global":[8,9],"vqa_acc_score":0,"gen_method":"random"}]}\n',
      'jsonl',
    );
    expect(lines[0]!.pointer_candidates[0]!.pointer).toEqual([1, 0]);
    expect(() => parseIcdText('{"query_id":1}\nnot json', 'jsonl')).toThrow(
      /row 1, field '\(line\)': line 2 is not valid JSON/,
    );
    expect(() => parseIcdText('{"query_id":1}', 'jsonl')).toThrow(/row 0, field 'candidate_pool_ids'/);
    expect(() =>
      parseIcdRecords([
        {
          query_id: 1,
          candidate_pool_indices: [1, 2],
          pointer_candidates: [{ pointer: [0, 1], vqa_acc_score: 2 }],
        },
      ]),
    ).toThrow(/vqa_acc_score/);
  });
});

describe('VQAv2 soft accuracy', () => {
  it('gives 0, 0.3, 0.6, 0.9 and 1 for 0, 1, 2, 3 and 4 matches of ten, after normalisation', () => {
    const answers = (n: number) => [...Array(n).fill('Two'), ...Array(10 - n).fill('red')];
    expect([0, 1, 2, 3, 4].map((n) => vqaSoftAccuracy('2', answers(n)))).toEqual([0, 0.3, 0.6, 0.9, 1]);
    expect(vqaSoftAccuracy('the dog.', ['dog'])).toBe(1);
    expect(isVqaCorrect(0.3)).toBe(1);
  });
});

describe("commit-on-improve (the seed's unit cases)", () => {
  const t = (score: number): IcdTrajectory => ({
    pointer: [0, 1],
    vqa_correct: isVqaCorrect(score),
    vqa_acc_score: score,
    gen_method: 'sample',
  });
  const controller = new TrajectoryQualityController();
  it('commits a higher max, a new distinct score, and rejects a repeat', () => {
    expect(controller.shouldCommit([t(0.3)], t(0.6))).toBe(true);
    expect(controller.shouldCommit([t(1), t(0.6)], t(0))).toBe(true);
    expect(controller.shouldCommit([t(1), t(0)], t(0))).toBe(false);
    expect(controller.shouldCommit([], t(0))).toBe(true);
  });
});

describe('pipeline: normalise varying K, inject, control, dataset view', () => {
  it('loads into the dataset view with K x d candidates gathered by global index and local beam labels', () => {
    const raw = [record(range(40)), { ...record(range(10, 90)), query_id: 6 }];
    const { records } = normaliseIcdPools(raw, { poolSize: 64, table, queryEmbedding });
    const injector = new CandidatePoolInjector({ table, maxInjectPerQuery: 8 });
    const injected = records.map(
      (r) =>
        injector.injectPositives(
          r,
          [{ global_indices: [150, 151], acc_score: 1 }],
          queryEmbedding(r.query_id),
        ).record,
    );
    const controller = new TrajectoryQualityController();
    const final = injected.map((r) => ({
      ...r,
      pointer_candidates: controller.selectFinalTrajectories(r.pointer_candidates),
    }));
    expect(storedOracleAtK(final)).toBe(1);
    const view = createIcdDatasetView(final, { table, queryEmbedding });
    const item = view.item(1);
    expect(item.candidateEmbeddings).toHaveLength(64 * D);
    const g = item.poolIndices[3]!;
    expect(Array.from(item.candidateEmbeddings.subarray(3 * D, 4 * D))).toEqual(
      Array.from(table.data.subarray(g * D, (g + 1) * D)),
    );
    expect(item.beamLabels[0]!.map((p) => item.poolIndices[p])).toEqual([90, 91]);
  });

  it("gives each distinct beam pointer once as a label: the quota's copies of an acc-0 beam are not more labels (issue 28)", () => {
    const zeroBeam = {
      pointer: [3, 4],
      vqa_correct: 0 as const,
      vqa_acc_score: 0,
      gen_method: 'beam' as const,
    };
    const other = {
      pointer: [5, 6],
      vqa_correct: 0 as const,
      vqa_acc_score: 0,
      gen_method: 'random' as const,
    };
    const final = new TrajectoryQualityController().selectFinalTrajectories([zeroBeam, other]);
    expect(final.filter((t) => t.gen_method === 'beam').length).toBeGreaterThan(1);
    const view = createIcdDatasetView([{ ...record(range(64)), pointer_candidates: final }], {
      table,
      queryEmbedding,
    });
    expect(view.item(0).beamLabels).toEqual([[3, 4]]);
  });

  it('warns, without failing, when injection does not raise the oracle', () => {
    const warnings: string[] = [];
    const injector = new CandidatePoolInjector({ table, warn: (m) => warnings.push(m) });
    const [r] = normaliseIcdPools([record(range(64))], { poolSize: 64, table, queryEmbedding }).records;
    injector.injectPositives(r!, [], queryEmbedding(5));
    expect(warnings[0]).toMatch(/query 5: oracle@64 did not rise/);
  });
});
