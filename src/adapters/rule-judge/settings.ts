import { z } from 'zod';

/** Seed 004's similarity threshold. */
export const DEFAULT_PARTIAL_THRESHOLD = 0.5;

export const ruleJudgeSettingsSchema = z
  .object({
    /** Below this similarity the answer scores 0 (the Search-R1 spec's threshold, docs/method.md#search-r1-reward). */
    partialThreshold: z.number().min(0).max(1).default(DEFAULT_PARTIAL_THRESHOLD),
  })
  .strict();
