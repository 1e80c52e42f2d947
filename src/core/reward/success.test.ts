import { describe, expect, it } from 'vitest';
import { isExactMatch, isJudgeSuccess } from './success';

describe('success', () => {
  it('is the judge full score, not a partial one', () => {
    expect(isJudgeSuccess(1)).toBe(true);
    expect(isJudgeSuccess(0.8)).toBe(false);
    expect(isJudgeSuccess(0.5)).toBe(false);
    expect(isJudgeSuccess(null)).toBe(false);
    expect(isJudgeSuccess(undefined)).toBe(false);
  });
  it('is an exact match up to case and whitespace', () => {
    expect(isExactMatch(' Dara  Ito', 'dara ito')).toBe(true);
    expect(isExactMatch('Omar Ito', 'Dara Ito')).toBe(false);
    expect(isExactMatch('', '')).toBe(false);
  });
});
