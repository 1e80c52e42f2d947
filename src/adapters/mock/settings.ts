import { z } from 'zod';

/** What the mock generator answers when no evidence supports an answer. */
export const MOCK_FALLBACK_ANSWER = 'unknown';

// The parts of the mocks' settings a configuration file can hold (functions and images cannot).

export const mockSearchEngineConfigSchema = z
  .object({
    pages: z
      .array(
        z
          .object({
            basename: z.string().min(1),
            text: z.string(),
            id: z.string().optional(),
            keywords: z.array(z.string()).optional(),
          })
          .strict(),
      )
      .default([]),
    /** Seed 004's knowledge base: keyword -> information. */
    knowledgeBase: z.record(z.string(), z.string()).default({}),
  })
  .strict();

export const mockGeneratorConfigSchema = z
  .object({
    /** Page basename -> the answer that page supports. */
    facts: z.record(z.string(), z.string()).default({}),
    /** A fixed answer for every question. */
    answer: z.string().optional(),
    /** The answer when no evidence supports one. */
    fallback: z.string().default(MOCK_FALLBACK_ANSWER),
  })
  .strict();
