import { z } from 'zod';
import { positiveInt } from '../../provider-utils/settings';

// Apart from the adapters so that a configuration can name them without loading undici.

/** A retriever's answer (top-k documents, or a page of web results) is kilobytes; 8 MiB stops a runaway body. */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 2 ** 20;
/** A page image: a scanned page at print resolution is a few megabytes. */
export const DEFAULT_MAX_IMAGE_BYTES = 32 * 2 ** 20;

/** The largest response body read, in bytes; a larger one is a ProviderCallError (not retried). */
const maxResponseBytes = positiveInt().default(DEFAULT_MAX_RESPONSE_BYTES);
export const searchR1Schema = z
  .object({
    /** The retrieval server, e.g. http://127.0.0.1:8000 (Search-R1's retrieval_server.py). */
    url: z.string().url(),
    headers: z.record(z.string(), z.string()).optional(),
    maxResponseBytes,
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
     * under `imageRoot`: a path that is absolute, has a `..` segment or leads out through a link
     * is refused), or a base URL they are served under (by basename).
     */
    images: z
      .union([z.literal('none'), z.literal('file'), z.object({ baseUrl: z.string().url() }).strict()])
      .default('file'),
    /** The folder `image_file` paths are read under (default: the working directory). */
    imageRoot: z.string().optional(),
    headers: z.record(z.string(), z.string()).optional(),
    maxResponseBytes,
    /** The largest page image read (from disk or `images.baseUrl`), in bytes. */
    maxImageBytes: positiveInt().default(DEFAULT_MAX_IMAGE_BYTES),
  })
  .strict();

export const braveSchema = z
  .object({
    /** Default: the BRAVE_SEARCH_API_KEY environment variable, read at the first call. */
    apiKey: z.string().min(1).optional(),
    baseUrl: z.string().url().default('https://api.search.brave.com'),
    country: z.string().length(2).optional(),
    safesearch: z.enum(['off', 'moderate', 'strict']).optional(),
    maxResponseBytes,
  })
  .strict();
