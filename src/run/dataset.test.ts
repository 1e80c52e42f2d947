import { describe, expect, it } from 'vitest';
import { DatasetValidationError } from '../core/errors';
import { promptFromJsonRow } from './dataset';

describe('promptFromJsonRow', () => {
  it("keeps every accepted answer: `answers`, or Search-R1's `golden_answers`", () => {
    expect(
      promptFromJsonRow({ uid: 'q', question: 'Who?', golden_answers: ['Mick Jagger', 'Keith Richards'] }, 0),
    ).toMatchObject({
      reference: 'Mick Jagger | Keith Richards',
      answers: ['Mick Jagger', 'Keith Richards'],
    });
    expect(
      promptFromJsonRow(
        { uid: 'q', question: 'Where?', reference: 'the Indian Ocean', answers: ['the Indian Ocean'] },
        0,
      ),
    ).toMatchObject({ reference: 'the Indian Ocean', answers: ['the Indian Ocean'] });
    expect(promptFromJsonRow({ uid: 'q', question: 'Where?', reference: 'x' }, 0).answers).toBeUndefined();
  });

  it('refuses answers that are not non-empty strings, naming the row and the field', () => {
    for (const [row, field] of [
      [{ question: 'q', golden_answers: ['a', 3] }, 'golden_answers'],
      [{ question: 'q', answers: 'a' }, 'answers'],
      [{ question: 'q', answers: ['a', ''] }, 'answers'],
    ] as const) {
      let error: unknown;
      try {
        promptFromJsonRow(row as Record<string, unknown>, 4);
      } catch (e) {
        error = e;
      }
      expect(DatasetValidationError.isInstance(error), JSON.stringify(row)).toBe(true);
      expect(error).toMatchObject({ row: 4, field });
    }
  });
});
