import { describe, expect, it } from 'vitest';
import { DatasetValidationError } from './errors';
import { checkPromptRecords } from './prompt-records';
import type { PromptRecord } from './types';

describe('checkPromptRecords', () => {
  const good = { uid: 'a', question: 'q?' };
  it('refuses every row that is not an object, holes of a sparse array included, naming the row', () => {
    for (const [prompts, row] of [
      [[good, null], 1],
      [[42], 0],
      [['q'], 0],
      [[good, [good]], 1],
      // biome-ignore lint/suspicious/noSparseArray: a hole is what is checked
      [[, good], 0],
      [[good, undefined], 1],
    ] as Array<[PromptRecord[], number]>) {
      let error: unknown;
      try {
        checkPromptRecords(prompts, { needsReference: false });
      } catch (e) {
        error = e;
      }
      expect(DatasetValidationError.isInstance(error), JSON.stringify(prompts)).toBe(true);
      expect(error).toMatchObject({ row, field: '(record)' });
    }
    expect(() => checkPromptRecords([good], { needsReference: false })).not.toThrow();
    // biome-ignore lint/suspicious/noSparseArray: a hole is what is checked
    const golden = [, 'p1.png'] as string[];
    expect(() =>
      checkPromptRecords([{ ...good, goldenBasenames: golden }], { needsReference: false }),
    ).toThrow(/goldenBasenames\.0/);
  });
  it('refuses answers that are not a non-empty array of non-empty strings, naming the field', () => {
    const good = { uid: 'a', question: 'q?' };
    for (const [answers, field] of [
      [[], 'answers'],
      ['a', 'answers'],
      [['a', ''], 'answers.1'],
      [['a', 7], 'answers.1'],
    ] as Array<[unknown, string]>) {
      expect(() =>
        checkPromptRecords([good, { ...good, answers: answers as string[] }], { needsReference: false }),
      ).toThrow(expect.objectContaining({ row: 1, field }));
    }
    expect(() =>
      checkPromptRecords([{ ...good, answers: ['a', 'b'] }], { needsReference: false }),
    ).not.toThrow();
  });
});
