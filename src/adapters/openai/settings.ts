import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

// Apart from the adapter so that a configuration can name it without loading the openai SDK.

/** A generator's or judge's answer is a few kilobytes; 16 MiB leaves room for a long one and stops a runaway body. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 2 ** 20;
/** 256 texts (a batch of the ICD flow) of 3,072 floats as JSON are about 17 MB. */
export const DEFAULT_MAX_EMBEDDING_RESPONSE_BYTES = 64 * 2 ** 20;
/** The OpenAI generator's and judge's settings as a zod schema. */
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
    /** The largest response body read, in bytes; a larger one is a ProviderCallError (not retried). */
    maxResponseBytes: positiveInt().default(DEFAULT_MAX_RESPONSE_BYTES),
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
    /** The largest response body read, in bytes; a larger one is a ProviderCallError (not retried). */
    maxResponseBytes: positiveInt().default(DEFAULT_MAX_EMBEDDING_RESPONSE_BYTES),
  })
  .strict();
