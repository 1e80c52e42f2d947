import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

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
    maxOutputTokens: positiveInt().optional(),
    instructions: z.string().optional(),
  })
  .strict();

/** `createOpenAIEmbedder`: an OpenAI-compatible `/embeddings` endpoint. */
export const openaiEmbedderSettingsSchema = z
  .object({
    model: z.string().min(1),
    /** The vector length; sent as `dimensions` when `sendDimensions` (text-embedding-3-*), checked on every answer. */
    dimensions: positiveInt(),
    sendDimensions: z.boolean().default(true),
    apiKey: z.string().min(1).optional(),
    baseURL: z.string().url().optional(),
    organization: z.string().optional(),
  })
  .strict();
