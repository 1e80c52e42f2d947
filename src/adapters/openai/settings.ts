import { z } from 'zod';

// Apart from the adapter so that a configuration can name it without loading the openai SDK.
export const openaiSettingsSchema = z
  .object({
    model: z.string().min(1),
    /** Default: the OPENAI_API_KEY environment variable, read at the first call. */
    apiKey: z.string().min(1).optional(),
    /** An OpenAI-compatible endpoint (Azure, a proxy, a local server). */
    baseURL: z.string().url().optional(),
    organization: z.string().optional(),
    reasoningEffort: z.enum(['minimal', 'low', 'medium', 'high']).optional(),
    maxOutputTokens: z.number().int().positive().optional(),
    instructions: z.string().optional(),
  })
  .strict();
