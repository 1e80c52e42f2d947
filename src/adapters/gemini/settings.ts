import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

// Apart from the adapter so that a configuration can name it without loading @google/genai.

/** A generator's or judge's answer is a few kilobytes; 16 MiB leaves room for a long one and stops a runaway body. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 2 ** 20;
/** The Gemini adapters' settings as a zod schema. */
export const geminiSettingsSchema = z
  .object({
    model: z.string().min(1),
    /** Default: GEMINI_API_KEY, then GOOGLE_API_KEY, read at the first call. */
    apiKey: z.string().min(1).optional(),
    /** Another endpoint (a proxy, a local server). */
    baseUrl: z.string().url().optional(),
    maxOutputTokens: positiveInt().optional(),
    /** Thinking budget in tokens (0 turns thinking off where the model allows). */
    thinkingBudget: z.number().int().min(0).optional(),
    instructions: z.string().optional(),
    /** The largest response body read, in bytes; a larger one is a ProviderCallError (not retried). */
    maxResponseBytes: positiveInt().default(DEFAULT_MAX_RESPONSE_BYTES),
  })
  .strict();
