import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DatasetValidationError, InvalidArgumentError } from '../errors';
import { createRandom } from '../random';
import { createIcdDatasetView } from './dataset-view';
import { createEmbeddingTable, similarities } from './embeddings';
import { CandidatePoolInjector } from './injector';
import { normaliseIcdPools } from './normalise';
import type { IcdQueryRecord } from './types';

const TABLE_ROWS = 200;
const D = 8;
const table = (() => {
  const random = createRandom(5);
  return createEmbeddingTable(
    Array.from({ length: TABLE_ROWS }, () => Array.from({ length: D }, () => random.nextNormal())),
  );
})();
const queryEmbedding = (id: number) => Array.from({ length: D }, (_, k) => Math.cos(id * 3 + k));
/** Distinct rows of the table, from `minLength` to `maxLength` of them: a pool, a positive's shots. */
const tableRows = (minLength: number, maxLength: number) =>
  fc.uniqueArray(fc.integer({ min: 0, max: TABLE_ROWS - 1 }), { minLength, maxLength });
/** A positive (distinct rows, one of the mined scores) for the property tests. */
const positiveArbitrary = (minLength: number, maxLength: number) =>
  fc.record({ global_indices: tableRows(minLength, maxLength), acc_score: fc.constantFrom(0.3, 0.6, 1) });
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => i + from);
const record = (pool: number[], pointers: number[][] = [[0, 1]]): IcdQueryRecord => ({
  query_id: 5,
  candidate_pool_indices: pool,
  pointer_candidates: pointers.map((pointer) => ({
    pointer,
    pointer_global: pointer.map((p) => pool[p]!),
    vqa_correct: 0,
    vqa_acc_score: 0,
    gen_method: 'beam',
  })),
});

afterEach(() => vi.restoreAllMocks());

describe('injection at the cap never leaves half a pair (issue 24, item 15)', () => {
  it('with room for 3, two missing pairs give one whole pair, not a pair and a half', () => {
    const injector = new CandidatePoolInjector({ table, maxInjectPerQuery: 3, warn: () => undefined });
    const result = injector.injectPositives(
      record(range(64)),
      [
        { global_indices: [150, 151], acc_score: 1 },
        { global_indices: [160, 161], acc_score: 0.6 },
      ],
      queryEmbedding(5),
    );
    expect(result.replaced.map((r) => r.added)).toEqual([150, 151]);
    expect(result.transferred).toBe(1);
    // A later pair that needs one slot still fits in the room left.
    const more = injector.injectPositives(
      record(range(64)),
      [
        { global_indices: [150, 151], acc_score: 1 },
        { global_indices: [160, 161], acc_score: 0.6 },
        { global_indices: [170, 150], acc_score: 0.3 },
      ],
      queryEmbedding(5),
    );
    expect(more.replaced.map((r) => r.added)).toEqual([150, 151, 170]);
    expect(more.transferred).toBe(2);
  });

  it('never replaces a member of a positive already whole in the pool', () => {
    // The two pool members least similar to the query (the first the injector would replace) are a
    // positive already whole in the pool; injecting other pairs must not evict them.
    const pool = range(64);
    const scores = similarities(table, queryEmbedding(5));
    const [a, b] = pool.slice(2).sort((x, y) => scores[x]! - scores[y]!);
    const injector = new CandidatePoolInjector({ table, maxInjectPerQuery: 8, warn: () => undefined });
    const positives = [
      { global_indices: [a!, b!], acc_score: 1 },
      ...range(4).map((i) => ({ global_indices: [100 + 2 * i, 101 + 2 * i], acc_score: 0.6 })),
    ];
    const result = injector.injectPositives(record(pool), positives, queryEmbedding(5));
    const after = new Set(result.record.candidate_pool_indices);
    for (const p of positives) expect(p.global_indices.every((g) => after.has(g))).toBe(true);
    expect(result.transferred).toBe(5);
  });

  it('for any pool, positives and cap: every injected candidate completes a positive, and at most the cap are injected', () => {
    const positive = positiveArbitrary(2, 2);
    fc.assert(
      fc.property(
        tableRows(64, 64),
        fc.array(positive, { maxLength: 12 }),
        fc.integer({ min: 0, max: 10 }),
        (pool, positives, cap) => {
          const injector = new CandidatePoolInjector({
            table,
            maxInjectPerQuery: cap,
            warn: () => undefined,
          });
          const before = record(pool, [
            [0, 1],
            [2, 3],
          ]);
          const result = injector.injectPositives(before, positives, queryEmbedding(5));
          const after = result.record.candidate_pool_indices;
          const inPool = new Set(after);
          expect(after).toHaveLength(64);
          expect(inPool.size).toBe(64);
          expect(result.replaced.length).toBeLessThanOrEqual(cap);
          const whole = positives.filter((p) => p.global_indices.every((g) => inPool.has(g)));
          for (const r of result.replaced)
            expect(
              whole.some((p) => p.global_indices.includes(r.added)),
              `${r.added} is half a pair`,
            ).toBe(true);
          for (const t of result.record.pointer_candidates)
            expect(t.pointer.map((p) => after[p])).toEqual(t.pointer_global);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('for any pool, trajectories, positives and cap: the replaced candidates are the least similar ones that no kept trajectory uses (issue 41)', () => {
    // A table whose rows are not unit length: similarity is the cosine all the same.
    const random = createRandom(11);
    const raw = {
      rows: TABLE_ROWS,
      dimensions: D,
      data: Float32Array.from(
        { length: TABLE_ROWS * D },
        () => random.nextNormal() * (1 + random.nextFloat() * 4),
      ),
    };
    const cosine = (g: number, q: readonly number[]) => {
      const row = raw.data.subarray(g * D, (g + 1) * D);
      let dot = 0;
      let nr = 0;
      let nq = 0;
      for (let k = 0; k < D; k++) {
        dot += row[k]! * q[k]!;
        nr += row[k]! ** 2;
        nq += q[k]! ** 2;
      }
      return dot / Math.sqrt(nr * nq);
    };
    const positive = positiveArbitrary(1, 3);
    fc.assert(
      fc.property(
        tableRows(64, 64),
        fc.array(fc.uniqueArray(fc.integer({ min: 0, max: 63 }), { minLength: 2, maxLength: 2 }), {
          maxLength: 20,
        }),
        fc.array(positive, { maxLength: 12 }),
        fc.integer({ min: 0, max: 12 }),
        fc.integer({ min: 0, max: 50 }),
        (pool, pointers, positives, cap, queryId) => {
          const injector = new CandidatePoolInjector({
            table: raw,
            maxInjectPerQuery: cap,
            warn: () => undefined,
          });
          const query = queryEmbedding(queryId);
          const result = injector.injectPositives(record(pool, pointers), positives, query);
          const after = result.record.candidate_pool_indices;
          const used = new Set(result.record.pointer_candidates.flatMap((t) => t.pointer));
          const replacedSlots = new Set(result.replaced.map((r) => r.local));
          for (const pointer of pointers) for (const p of pointer) expect(replacedSlots.has(p)).toBe(false);
          const freeLeft = after
            .map((g, slot) => ({ g, slot }))
            .filter(({ slot }) => !used.has(slot) && !replacedSlots.has(slot));
          for (const r of result.replaced)
            for (const { g } of freeLeft)
              expect(
                cosine(r.removed, query),
                `replaced ${r.removed} while ${g} stayed free`,
              ).toBeLessThanOrEqual(cosine(g, query) + 1e-6);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a positive with a repeated index or of no indices is refused with a typed error', () => {
    const injector = new CandidatePoolInjector({ table, warn: () => undefined });
    expect(() =>
      injector.injectPositives(
        record(range(64)),
        [{ global_indices: [150, 150], acc_score: 1 }],
        queryEmbedding(5),
      ),
    ).toThrowError(InvalidArgumentError);
    expect(() =>
      injector.injectPositives(record(range(64)), [{ global_indices: [], acc_score: 1 }], queryEmbedding(5)),
    ).toThrowError(InvalidArgumentError);
  });
});

describe('error rule 4: no improvement after injection logs a warning by default (issue 24, item 14)', () => {
  it('an injector given no warn callback writes the warning with console.warn', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => undefined);
    const injector = new CandidatePoolInjector({ table });
    injector.injectPositives(record(range(64)), [], queryEmbedding(5));
    expect(warn).toHaveBeenCalledTimes(1);
    expect(String(warn.mock.calls[0]![0])).toMatch(/query 5: oracle@64 did not rise after injection/);
  });
});

describe('a missing or malformed query embedding is a typed error (issue 24, item 15)', () => {
  const missing = (id: number) => (id === 6 ? (undefined as unknown as number[]) : queryEmbedding(id));
  const records = [
    { ...record(range(64)), query_id: 5 },
    { ...record(range(64, 64)), query_id: 6 },
  ];
  it('normaliseIcdPools names the row and the query', () => {
    const error = (() => {
      try {
        normaliseIcdPools(records, { poolSize: 64, table, queryEmbedding: missing });
      } catch (e) {
        return e;
      }
    })();
    expect(DatasetValidationError.isInstance(error), String(error)).toBe(true);
    expect((error as DatasetValidationError).row).toBe(1);
    expect((error as DatasetValidationError).field).toBe('query_id');
    expect((error as Error).message).toMatch(/query 6 has no query embedding/);
    expect(() =>
      normaliseIcdPools(records, { poolSize: 64, table, queryEmbedding: () => [1, 2, 3] }),
    ).toThrow(/query 5's embedding has 3 numbers, the candidates' 8/);
    expect(() =>
      normaliseIcdPools(records, {
        poolSize: 64,
        table,
        queryEmbedding: () => Array.from({ length: D }, () => Number.NaN),
      }),
    ).toThrowError(DatasetValidationError);
  });

  it('the dataset view, the injector and the miner input say which query has none', () => {
    const view = createIcdDatasetView(records, { table, queryEmbedding: missing });
    expect(() => view.item(1)).toThrowError(DatasetValidationError);
    expect(() => view.item(1)).toThrow(/query 6 has no query embedding/);
    const injector = new CandidatePoolInjector({ table, warn: () => undefined });
    expect(() => injector.injectPositives(records[1]!, [], undefined as unknown as number[])).toThrowError(
      InvalidArgumentError,
    );
  });
});
