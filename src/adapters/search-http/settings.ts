import { z } from 'zod';

// Apart from the adapters so that a configuration can name them without loading undici.
export const searchR1Schema = z
  .object({
    /** The retrieval server, e.g. http://127.0.0.1:8000 (Search-R1's retrieval_server.py). */
    url: z.string().url(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

export const vragSchema = z
  .object({
    /** The image search server, e.g. http://127.0.0.1:8002 (VRAG's search_engine_api.py). */
    url: z.string().url(),
    /**
     * `POST` (VRAG's current API: `{queries, top_k, vrag_ret: true}`) or `GET` (its first demo
     * server, `?queries=`, which returns its own default number of hits).
     */
    method: z.enum(['POST', 'GET']).default('POST'),
    /**
     * How to get the page images: `none` (basenames only), `file` (read `image_file` from disk,
     * relative to `imageRoot`), or a base URL they are served under.
     */
    images: z
      .union([z.literal('none'), z.literal('file'), z.object({ baseUrl: z.string().url() }).strict()])
      .default('file'),
    imageRoot: z.string().optional(),
    headers: z.record(z.string(), z.string()).optional(),
  })
  .strict();

export const braveSchema = z
  .object({
    /** Default: the BRAVE_SEARCH_API_KEY environment variable, read at the first call. */
    apiKey: z.string().min(1).optional(),
    baseUrl: z.string().url().default('https://api.search.brave.com'),
    country: z.string().length(2).optional(),
    safesearch: z.enum(['off', 'moderate', 'strict']).optional(),
  })
  .strict();
