import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

/** What the extractive reader answers when no page supports an answer. */
export const EXTRACTIVE_FALLBACK_ANSWER = 'unknown';

// Apart from the adapter so that a configuration can name it without loading it.
/**
 * The extractive generator's settings as a zod schema (what `adapters.generator: {type:
 * extractive}` is checked against).
 */
export const extractiveGeneratorSettingsSchema = z
  .object({
    maxAnswerWords: positiveInt()
      .default(8)
      .describe('Words of the answer span at most (a longer span is cut there).'),
    fallback: z
      .string()
      .default(EXTRACTIVE_FALLBACK_ANSWER)
      .describe('The answer when no retrieved text shares a word with the question.'),
  })
  .strict();
