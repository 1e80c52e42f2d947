import { describe, expect, it } from 'vitest';
import { createGeminiJudge } from '../src/adapters/gemini/index';
import { createOpenAIJudge } from '../src/adapters/openai/index';
import { withReliability } from '../src/core/calls/with-reliability';

// Live calls to the real providers run only when asked: SEARCHER_RL_LIVE=1 and the keys set.
const live = process.env.SEARCHER_RL_LIVE === '1';

describe.runIf(live && Boolean(process.env.OPENAI_API_KEY))('live OpenAI judge', () => {
  it('scores a correct answer high and a wrong one low', async () => {
    const judge = withReliability(
      createOpenAIJudge({ model: process.env.OPENAI_JUDGE_MODEL ?? 'gpt-5-mini' }),
      'judge',
    );
    expect(
      (await judge.doScore('What is the capital of France?', 'Paris', 'Paris')).score,
    ).toBeGreaterThanOrEqual(0.9);
    expect(
      (await judge.doScore('What is the capital of France?', 'Berlin', 'Paris')).score,
    ).toBeLessThanOrEqual(0.1);
  });
});

describe.runIf(live && Boolean(process.env.GEMINI_API_KEY ?? process.env.GOOGLE_API_KEY))(
  'live Gemini judge',
  () => {
    it('scores a correct answer high and a wrong one low', async () => {
      const judge = withReliability(
        createGeminiJudge({ model: process.env.GEMINI_JUDGE_MODEL ?? 'gemini-3-flash-preview' }),
        'judge',
      );
      expect(
        (await judge.doScore('What is the capital of France?', 'Paris', 'Paris')).score,
      ).toBeGreaterThanOrEqual(0.9);
      expect(
        (await judge.doScore('What is the capital of France?', 'Berlin', 'Paris')).score,
      ).toBeLessThanOrEqual(0.1);
    });
  },
);
