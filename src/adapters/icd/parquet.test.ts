import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { DatasetValidationError } from '../../core/errors';
import type { IcdQueryRecord } from '../../core/icd/types';
import { readIcdParquet, writeIcdParquet } from './parquet';

const records: IcdQueryRecord[] = [
  {
    query_id: 7,
    candidate_pool_indices: [10, 11, 12, 13],
    pointer_candidates: [
      { pointer: [0, 2], vqa_correct: 1, vqa_acc_score: 1, gen_method: 'beam' },
      { pointer: [3, 1], pointer_global: [13, 11], vqa_correct: 0, vqa_acc_score: 0, gen_method: 'sample' },
    ],
  },
  {
    query_id: 8,
    candidate_pool_indices: [20, 21, 22, 23],
    pointer_candidates: [
      { pointer: [1, 0], vqa_correct: 1, vqa_acc_score: 0.6, gen_method: 'global_positive_transfer' },
    ],
  },
];

describe('ICD records as Parquet', () => {
  it('round-trips nested pools and trajectories', async () => {
    const back = await readIcdParquet(writeIcdParquet(records));
    expect(back.map((r) => r.query_id)).toEqual([7, 8]);
    expect(back[0]!.candidate_pool_indices).toEqual([10, 11, 12, 13]);
    expect(back[0]!.pointer_candidates[1]).toMatchObject({
      pointer: [3, 1],
      pointer_global: [13, 11],
      vqa_correct: 0,
      vqa_acc_score: 0,
      gen_method: 'sample',
    });
    expect(back[1]!.pointer_candidates[0]).toMatchObject({
      pointer: [1, 0],
      vqa_acc_score: 0.6,
      gen_method: 'global_positive_transfer',
    });
  });

  it('reads `candidate_pool_ids` (files in the wild) and names a bad row', async () => {
    const wild = parquetWriteBuffer({
      columnData: [
        { name: 'query_id', data: [1, 2] },
        {
          name: 'candidate_pool_ids',
          data: [
            [5, 6],
            [7, 8],
          ],
        },
        {
          name: 'pointer_candidates',
          data: [
            [{ pointer: [1, 0], vqa_correct: 1, vqa_acc_score: 1, gen_method: 'beam' }],
            [{ pointer: [2, 0], vqa_correct: 1, vqa_acc_score: 1, gen_method: 'beam' }],
          ],
        },
      ],
    });
    const error = await readIcdParquet(new Uint8Array(wild)).catch((e: unknown) => e);
    // Row 1's pointer 2 is outside its pool of 2: the error names the trajectory.
    expect(DatasetValidationError.isInstance(error) || (error as Error).message.includes('pointer')).toBe(
      true,
    );
    expect((error as Error).message).toMatch(/pointer/);
  });

  it('checks every field as the JSON reader does: a global index in pointer, a missing gen_method, a wrong vqa_correct (issue 24)', async () => {
    const file = (trajectory: Record<string, unknown>) =>
      new Uint8Array(
        parquetWriteBuffer({
          columnData: [
            { name: 'query_id', data: [1, 2] },
            {
              name: 'candidate_pool_indices',
              data: [
                [5, 6, 7],
                [40, 41, 42],
              ],
            },
            {
              name: 'pointer_candidates',
              data: [
                [{ pointer: [1, 0], vqa_correct: 1, vqa_acc_score: 1, gen_method: 'beam' }],
                [{ pointer: [1, 0], vqa_correct: 1, vqa_acc_score: 1, gen_method: 'beam', ...trajectory }],
              ],
            },
          ],
        }),
      );
    const refused = async (trajectory: Record<string, unknown>, field: string) => {
      const error = await readIcdParquet(file(trajectory)).catch((e: unknown) => e);
      expect(DatasetValidationError.isInstance(error), String(error)).toBe(true);
      expect((error as DatasetValidationError).row).toBe(1);
      expect((error as DatasetValidationError).field).toBe(field);
    };
    await refused({ pointer: [42, 40] }, 'pointer_candidates.0.pointer.0');
    await refused({ gen_method: null }, 'pointer_candidates.0.gen_method');
    await refused({ vqa_correct: 0 }, 'pointer_candidates.0.vqa_correct');
    await refused({ pointer: [2, 2] }, 'pointer_candidates.0.pointer');
  });
});
