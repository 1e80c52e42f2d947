import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

// Apart from the adapter so that a configuration can name it without loading @google/genai.
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
  })
  .strict();
