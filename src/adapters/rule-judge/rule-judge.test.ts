import { describe, expect, it } from 'vitest';
import { createRuleJudge, normaliseAnswer } from './index';

describe('createRuleJudge', () => {
  it('gives 1 for the reference, partial credit for near misses, 0 otherwise', async () => {
    const judge = createRuleJudge();
    expect((await judge.doScore('q', 'It was 4.5 billion dollars.', '4.5 billion dollars')).score).toBe(1);
    expect((await judge.doScore('q', 'The Eiffel Tower', 'eiffel tower')).score).toBe(1);
    expect(
      (await judge.doScore('q', '4.5 billion euros', '4.5 billion dollars')).score,
    ).toBeGreaterThanOrEqual(0.5);
    expect((await judge.doScore('q', '4.5 billion euros', '4.5 billion dollars')).score).toBeLessThan(1);
    expect((await judge.doScore('q', 'Berlin', '4.5 billion dollars')).score).toBe(0);
    expect((await judge.doScore('q', '7 billion dollars', '4.5 billion dollars')).score).toBe(0);
    expect(
      (await judge.doScore('q', '4.50 billion dollars total', '4.5 billion dollars')).score,
    ).toBeGreaterThan(0);
    expect((await judge.doScore('q', '', 'x')).score).toBe(0);
    expect(judge.calls).toHaveLength(8);
  });
  it('normalises case, punctuation, thousands separators and articles, keeping decimals', () => {
    expect(normaliseAnswer('The revenue: $4,500,000.5!')).toBe('revenue $4500000.5');
  });
});
