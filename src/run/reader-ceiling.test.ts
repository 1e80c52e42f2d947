import { describe, expect, it } from 'vitest';
import { describeReaderCeiling } from './reader-ceiling';

describe('describeReaderCeiling', () => {
  it('states the ceiling, and warns before training when it is low', () => {
    const high = describeReaderCeiling({
      split: 'test',
      questions: 40,
      answered: 30,
      ceiling: 0.75,
      failedCalls: 0,
    });
    expect(high).toBe(
      'reader ceiling on test: the generator answers 30 of 40 (75.0%) from the golden pages alone',
    );
    const low = describeReaderCeiling({
      split: 'test',
      questions: 140,
      answered: 23,
      ceiling: 23 / 140,
      failedCalls: 2,
    });
    expect(low).toMatch(
      /23 of 140 \(16\.4%\).*2 failed calls\. WARNING: the reader, not the search, limits this run/,
    );
    expect(
      describeReaderCeiling({ split: 'x', questions: 0, answered: 0, ceiling: null, failedCalls: 0 }),
    ).toMatch(/no question with a golden page/);
  });

  it('names a remedy other than the generator the run already has', () => {
    const at = (generator: string) =>
      describeReaderCeiling({
        split: 'test',
        questions: 30,
        answered: 9,
        ceiling: 0.3,
        failedCalls: 0,
        generator,
      });
    expect(at('extractive')).toMatch(/adapters\.generator type llama or an API model/);
    expect(at('llama')).not.toMatch(/type llama/);
    expect(at('llama')).toMatch(
      /a stronger generator than this one \(llama\), e\.g\. a larger model or an API model/,
    );
  });
});
