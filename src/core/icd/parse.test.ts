import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DatasetValidationError } from '../errors';
import { validateIcdRecords } from './index-maps';
import { parseIcdRecords, parseIcdText } from './parse';
import type { IcdQueryRecord } from './types';

/** The error a call throws (undefined when it does not throw). */
const thrown = (run: () => unknown): unknown => {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
};

/** A DatasetValidationError naming the row and the field. */
const expectRefused = (run: () => unknown, row: number, field: string, message?: RegExp) => {
  const error = thrown(run);
  expect(DatasetValidationError.isInstance(error), String(error)).toBe(true);
  expect((error as DatasetValidationError).row).toBe(row);
  expect((error as DatasetValidationError).field).toBe(field);
  if (message) expect((error as Error).message).toMatch(message);
};

const POOL = [101, 102, 103, 104, 105, 349, 446];
const good = { pointer: [0, 1], vqa_correct: 1, vqa_acc_score: 1, gen_method: 'beam' };
/** Two valid records, the second's first trajectory overridden by `over`. */
const withTrajectory = (over: Record<string, unknown>, drop: string[] = []) => {
  const trajectory: Record<string, unknown> = { ...good, ...over };
  for (const key of drop) delete trajectory[key];
  return [
    { query_id: 1, candidate_pool_indices: POOL, pointer_candidates: [good] },
    { query_id: 2, candidate_pool_indices: POOL, pointer_candidates: [good, trajectory] },
  ];
};

describe('pointers: local or global is said by the field, never guessed from the values', () => {
  it('a pointer without pointer_global is local: [349, 446] in a pool of 7 is error rule 2, not [5, 6]', () => {
    expectRefused(
      () => parseIcdRecords(withTrajectory({ pointer: [349, 446] })),
      1,
      'pointer_candidates.1.pointer.0',
      /query 2, trajectory 1 .*index 349 is outside \[0, 6\].*pointer_global/,
    );
  });

  it('a pointer with pointer_global is local too, and out of range is error rule 2', () => {
    expectRefused(
      () => parseIcdRecords(withTrajectory({ pointer: [349, 446], pointer_global: [349, 446] })),
      1,
      'pointer_candidates.1.pointer.0',
    );
  });

  it('pointer_global alone gives the choice in global indices; it is mapped to local ones', () => {
    const [, second] = parseIcdRecords(withTrajectory({ pointer_global: [349, 446] }, ['pointer']));
    expect(second!.pointer_candidates[1]).toEqual({
      pointer: [5, 6],
      pointer_global: [349, 446],
      vqa_correct: 1,
      vqa_acc_score: 1,
      gen_method: 'beam',
    });
  });

  it('a pointer_global that is not in the pool, or disagrees with the pointer, names the field', () => {
    expectRefused(
      () => parseIcdRecords(withTrajectory({ pointer_global: [349, 999] }, ['pointer'])),
      1,
      'pointer_candidates.1.pointer_global.1',
      /999 is not in the query's pool/,
    );
    expectRefused(
      () => parseIcdRecords(withTrajectory({ pointer: [5, 6], pointer_global: [446, 349] })),
      1,
      'pointer_candidates.1.pointer_global',
      /maps to \[349, 446\]/,
    );
    expectRefused(() => parseIcdRecords(withTrajectory({}, ['pointer'])), 1, 'pointer_candidates.1.pointer');
  });
});

describe('every field of a trajectory is checked (issue 24, item 15)', () => {
  it('a pointer of another length than the shots (2)', () => {
    expectRefused(
      () => parseIcdRecords(withTrajectory({ pointer: [0, 1, 2] })),
      1,
      'pointer_candidates.1.pointer',
      /2 indices/,
    );
    expectRefused(() => parseIcdRecords(withTrajectory({ pointer: [0] })), 1, 'pointer_candidates.1.pointer');
    expectRefused(
      () => parseIcdRecords(withTrajectory({ pointer_global: [101, 102, 103] }, ['pointer'])),
      1,
      'pointer_candidates.1.pointer_global',
    );
    // Three shots when the caller says so.
    const three = [
      { query_id: 1, candidate_pool_indices: POOL, pointer_candidates: [{ ...good, pointer: [0, 1, 2] }] },
    ];
    expect(parseIcdRecords(three, { shots: 3 })[0]!.pointer_candidates[0]!.pointer).toEqual([0, 1, 2]);
    expectRefused(() => parseIcdRecords(three), 0, 'pointer_candidates.0.pointer');
  });

  it('a pointer [x, x] (the same candidate twice)', () => {
    expectRefused(
      () => parseIcdRecords(withTrajectory({ pointer: [3, 3] })),
      1,
      'pointer_candidates.1.pointer',
      /same candidate twice/,
    );
    // Two positions holding the same global index (a raw pool with a repeat) are the same candidate.
    expectRefused(
      () =>
        parseIcdRecords([
          {
            query_id: 1,
            candidate_pool_indices: [7, 8, 7],
            pointer_candidates: [{ ...good, pointer: [0, 2] }],
          },
        ]),
      0,
      'pointer_candidates.0.pointer',
      /same candidate twice/,
    );
  });

  it('vqa_correct is 0 or 1 and agrees with the accuracy; absent, it follows from the accuracy', () => {
    for (const bad of [2, -1, 0.5, 'yes', true, [1]])
      expectRefused(
        () => parseIcdRecords(withTrajectory({ vqa_correct: bad })),
        1,
        'pointer_candidates.1.vqa_correct',
      );
    expectRefused(
      () => parseIcdRecords(withTrajectory({ vqa_correct: 1, vqa_acc_score: 0 })),
      1,
      'pointer_candidates.1.vqa_correct',
      /disagrees/,
    );
    expectRefused(
      () => parseIcdRecords(withTrajectory({ vqa_correct: 0, vqa_acc_score: 0.6 })),
      1,
      'pointer_candidates.1.vqa_correct',
    );
    const [, second] = parseIcdRecords(withTrajectory({ vqa_acc_score: 0.3 }, ['vqa_correct']));
    expect(second!.pointer_candidates[1]!.vqa_correct).toBe(1);
  });

  it('a missing gen_method is refused, not taken for beam', () => {
    expectRefused(
      () => parseIcdRecords(withTrajectory({}, ['gen_method'])),
      1,
      'pointer_candidates.1.gen_method',
      /beam, sample, random, global_positive_transfer/,
    );
    expectRefused(
      () => parseIcdRecords(withTrajectory({ gen_method: null })),
      1,
      'pointer_candidates.1.gen_method',
    );
  });

  it('an accuracy that is not a number in [0, 1]', () => {
    for (const bad of [Number.NaN, 1.5, -0.1, '1', null])
      expectRefused(
        () => parseIcdRecords(withTrajectory({ vqa_acc_score: bad })),
        1,
        'pointer_candidates.1.vqa_acc_score',
      );
    expectRefused(
      () => parseIcdRecords(withTrajectory({}, ['vqa_acc_score'])),
      1,
      'pointer_candidates.1.vqa_acc_score',
    );
  });
});

describe('every field of a record is checked', () => {
  it('query ids: missing, not an integer, repeated, or disagreeing with their key', () => {
    expectRefused(
      () => parseIcdRecords([{ candidate_pool_indices: [1, 2], pointer_candidates: [] }]),
      0,
      'query_id',
    );
    expectRefused(
      () => parseIcdRecords([{ query_id: 1.5, candidate_pool_indices: [1, 2], pointer_candidates: [] }]),
      0,
      'query_id',
    );
    expectRefused(
      () =>
        parseIcdRecords([
          { query_id: 4, candidate_pool_indices: [1, 2], pointer_candidates: [] },
          { query_id: 4, candidate_pool_indices: [3, 4], pointer_candidates: [] },
        ]),
      1,
      'query_id',
      /query 4 appears twice \(first at row 0\)/,
    );
    expectRefused(
      () => parseIcdRecords({ 4: { query_id: 5, candidate_pool_indices: [1, 2], pointer_candidates: [] } }),
      0,
      'query_id',
      /key '4'/,
    );
  });

  it('pools: negative or fractional global indices, two pool fields that disagree; trajectories required', () => {
    expectRefused(
      () => parseIcdRecords([{ query_id: 1, candidate_pool_indices: [1, -2], pointer_candidates: [] }]),
      0,
      'candidate_pool_indices.1',
    );
    expectRefused(
      () => parseIcdRecords([{ query_id: 1, candidate_pool_ids: [1, 2.5], pointer_candidates: [] }]),
      0,
      'candidate_pool_ids.1',
    );
    expectRefused(
      () =>
        parseIcdRecords([
          { query_id: 1, candidate_pool_indices: [1, 2], candidate_pool_ids: [1, 3], pointer_candidates: [] },
        ]),
      0,
      'candidate_pool_ids',
    );
    expectRefused(
      () => parseIcdRecords([{ query_id: 1, candidate_pool_indices: [1, 2] }]),
      0,
      'pointer_candidates',
    );
  });

  it('JSONL rows are named by their line (blank lines counted)', () => {
    const line = (over: Record<string, unknown>) =>
      JSON.stringify({
        query_id: 1,
        candidate_pool_indices: POOL,
        pointer_candidates: [{ ...good, ...over }],
      });
    expectRefused(
      () =>
        parseIcdText(
          `\n${line({})}\n\n${line({ pointer: [9, 0] }).replace('"query_id":1', '"query_id":2')}\n`,
          'jsonl',
        ),
      3,
      'pointer_candidates.0.pointer.0',
      /line 4/,
    );
  });
});

describe('validateIcdRecords checks the same fields on records built in code', () => {
  const record = (over: Record<string, unknown>): IcdQueryRecord =>
    ({
      query_id: 3,
      candidate_pool_indices: [10, 11, 12, 13],
      pointer_candidates: [{ ...good, ...over }],
    }) as IcdQueryRecord;
  it('pointer length, [x, x], vqa_correct, gen_method, and repeated query ids', () => {
    const validate = (records: IcdQueryRecord[]) => () => validateIcdRecords(records, { poolSize: 4 });
    expectRefused(validate([record({ pointer: [0, 1, 2] })]), 0, 'pointer_candidates.0.pointer');
    expectRefused(validate([record({ pointer: [2, 2] })]), 0, 'pointer_candidates.0.pointer');
    expectRefused(validate([record({ vqa_correct: 0 })]), 0, 'pointer_candidates.0.vqa_correct');
    expectRefused(validate([record({ gen_method: 'greedy' })]), 0, 'pointer_candidates.0.gen_method');
    expectRefused(validate([record({ vqa_acc_score: 2 })]), 0, 'pointer_candidates.0.vqa_acc_score');
    expectRefused(validate([record({}), record({})]), 1, 'query_id');
  });
});

describe('a parsed file passes validation or is refused with a typed error (property)', () => {
  it('for any mutation of one field of a valid record, parsing never throws anything but a DatasetValidationError', () => {
    const hostile = fc.oneof(
      fc.constant(undefined),
      fc.constant(null),
      fc.integer({ min: -3, max: 600 }),
      fc.double(),
      fc.string({ maxLength: 4 }),
      fc.array(fc.integer({ min: -2, max: 500 }), { maxLength: 4 }),
      fc.boolean(),
    );
    const fields = ['pointer', 'pointer_global', 'vqa_correct', 'vqa_acc_score', 'gen_method'];
    const recordFields = ['query_id', 'candidate_pool_indices', 'pointer_candidates'];
    fc.assert(
      fc.property(fc.constantFrom(...fields, ...recordFields), hostile, (field, value) => {
        const records = withTrajectory({}) as Array<Record<string, unknown>>;
        if (recordFields.includes(field)) records[1]![field] = value;
        else
          (records[1]!.pointer_candidates as Array<Record<string, unknown>>)[1] = { ...good, [field]: value };
        const error = thrown(() => parseIcdRecords(records));
        if (error === undefined) {
          // What is accepted is a valid record: local pointers of 2 distinct in-pool indices.
          const parsed = parseIcdRecords(records);
          for (const r of parsed)
            for (const t of r.pointer_candidates) {
              expect(t.pointer).toHaveLength(2);
              expect(new Set(t.pointer).size).toBe(2);
              for (const p of t.pointer) expect(p >= 0 && p < r.candidate_pool_indices.length).toBe(true);
              expect(t.vqa_correct).toBe(t.vqa_acc_score > 0 ? 1 : 0);
            }
        } else {
          expect(DatasetValidationError.isInstance(error), String(error)).toBe(true);
          expect((error as DatasetValidationError).row).toBe(1);
        }
      }),
      { numRuns: 300 },
    );
  });
});
