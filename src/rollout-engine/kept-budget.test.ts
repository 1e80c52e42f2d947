import { describe, expect, it } from 'vitest';
import { createKeptBudget } from './kept-budget';

describe('createKeptBudget', () => {
  it('keeps while the predicted bytes fit, and refuses a chunk that went past the budget after all', () => {
    const budget = createKeptBudget(1000);
    expect(budget.shouldKeep(10)).toBe(true); // nothing known yet
    expect(budget.admit(400, 10)).toBe(true); // 40 bytes a token
    expect(budget.shouldKeep(10)).toBe(true); // 400 + 400 <= 1000
    expect(budget.admit(400, 10)).toBe(true);
    expect(budget.shouldKeep(10)).toBe(false); // 800 + 400 > 1000: fetch the log-probs only
    expect(budget.shouldKeep(5)).toBe(true); // 800 + 200 fits
    expect(budget.admit(300, 5)).toBe(false); // it took more than predicted: dropped, not counted
    expect(budget.admit(200, 5)).toBe(true);
  });

  it('keeps nothing with a budget of 0', () => {
    const budget = createKeptBudget(0);
    expect(budget.shouldKeep(1)).toBe(false);
  });
});
