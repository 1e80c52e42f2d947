import { describe, expect, it } from 'vitest';
import { isExactMatchSuccess, isJudgeSuccess } from './success';

describe('success', () => {
  it('is the judge full score, not a partial one', () => {
    expect(isJudgeSuccess(1)).toBe(true);
    expect(isJudgeSuccess(0.8)).toBe(false);
    expect(isJudgeSuccess(0.5)).toBe(false);
    expect(isJudgeSuccess(null)).toBe(false);
    expect(isJudgeSuccess(undefined)).toBe(false);
  });
  it("is an exact match after SQuAD's normalisation, of any accepted answer", () => {
    expect(isExactMatchSuccess(' Dara  Ito', { reference: 'dara ito' })).toBe(true);
    expect(isExactMatchSuccess('Indian Ocean.', { reference: 'the Indian Ocean' })).toBe(true);
    expect(isExactMatchSuccess('Omar Ito', { reference: 'Dara Ito' })).toBe(false);
    expect(isExactMatchSuccess('', { reference: '' })).toBe(false);
    expect(isExactMatchSuccess('anything', { reference: null })).toBe(false);
    // Natural Questions' several golden answers: each is accepted; the reference is not added to them.
    const record = { reference: 'Mick Jagger | Keith Richards', answers: ['Mick Jagger', 'Keith Richards'] };
    expect(isExactMatchSuccess('keith richards', record)).toBe(true);
    expect(isExactMatchSuccess('Mick Jagger | Keith Richards', record)).toBe(false);
  });
});
