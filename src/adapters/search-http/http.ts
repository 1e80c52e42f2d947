import { request } from 'undici';
import { AbortedError, PortOutputError, ProviderCallError } from '../../core/errors';
import { MAX_ERROR_BODY_BYTES } from '../../provider-utils/http-guard';
import {
  parseRetryAfter,
  readCapped,
  redactSecrets,
  redirectTarget,
  toProviderError,
} from '../../provider-utils/index';
import { redactAndCut } from '../../provider-utils/redact';

export interface HttpJsonOptions {
  provider: string;
  method: 'GET' | 'POST';
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  signal?: AbortSignal;
  /** Secrets to keep out of error messages. */
  secrets?: ReadonlyArray<string | undefined>;
  /** A provider's own "come back later" header, when it has no Retry-After (milliseconds). */
  retryAfter?: (headers: Record<string, string | string[] | undefined>) => number | undefined;
  /** The largest body read; a larger one is a ProviderCallError, not retried, and is not read further. */
  maxResponseBytes: number;
}

/**
 * One HTTP attempt with undici, returning parsed JSON. Errors are typed for the core's
 * reliability layer: a status >= 400 keeps its status and Retry-After; a connection failure or a
 * body cut off is retryable; a malformed body, a body over `maxResponseBytes` or a redirect to
 * another origin is not; an abort is an AbortedError.
 */
export async function httpJson(options: HttpJsonOptions): Promise<unknown> {
  const { provider, signal } = options;
  const caller = { port: 'searchEngine' as const, provider };
  const secrets = options.secrets ?? [];
  let url = new URL(options.url);
  const origin = url.origin;
  let method = options.method;
  let body = options.body;
  let response: Awaited<ReturnType<typeof request>>;
  // undici does not follow redirects; those within the configured origin are followed here, one
  // elsewhere is refused before the headers (credentials) and the body go there (redirectTarget).
  for (let hops = 0; ; hops++) {
    try {
      response = await request(url, {
        method,
        headers: {
          accept: 'application/json',
          ...(body !== undefined && { 'content-type': 'application/json' }),
          ...options.headers,
        },
        ...(body !== undefined && { body: JSON.stringify(body) }),
        ...(signal && { signal }),
      });
    } catch (error) {
      throw toProviderError({
        port: 'searchEngine',
        provider,
        error: new Error(`connection failed: ${(error as Error).message}`, { cause: error }),
        signal,
        secrets,
      });
    }
    const location = response.headers.location;
    const next = redirectTarget(caller, {
      from: url,
      origin,
      status: response.statusCode,
      location: typeof location === 'string' ? location : null,
      hops,
    });
    if (next === null) break;
    await response.body.dump().catch(() => undefined);
    // As fetch does: a 303, or a 301/302 after a POST, is followed with a GET and no body.
    if (response.statusCode === 303 || (response.statusCode <= 302 && method === 'POST')) {
      method = 'GET';
      body = undefined;
    }
    url = next;
  }
  let text: string;
  try {
    const length = response.headers['content-length'];
    text = Buffer.from(
      await readCapped(caller, response.body, {
        // An error status's body is only its message: the first bytes are enough.
        maxBytes:
          response.statusCode >= 400
            ? Math.min(options.maxResponseBytes, MAX_ERROR_BODY_BYTES)
            : options.maxResponseBytes,
        contentLength: typeof length === 'string' ? length : undefined,
        truncate: response.statusCode >= 400,
      }),
    ).toString('utf8');
  } catch (error) {
    if (signal?.aborted)
      throw new AbortedError({ what: `searchEngine '${provider}' call`, cause: signal.reason });
    if (ProviderCallError.isInstance(error)) throw error;
    throw new ProviderCallError({
      port: 'searchEngine',
      provider,
      message: `the response body was cut off: ${redactSecrets((error as Error).message, secrets)}`,
      isRetryable: true,
    });
  }
  if (response.statusCode >= 400) {
    throw new ProviderCallError({
      port: 'searchEngine',
      provider,
      status: response.statusCode,
      retryAfterMs:
        parseRetryAfter(response.headers as Record<string, string | string[] | undefined>) ??
        options.retryAfter?.(response.headers as Record<string, string | string[] | undefined>),
      message: redactAndCut(text, secrets, 300) || `HTTP ${response.statusCode}`,
    });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ProviderCallError({
      port: 'searchEngine',
      provider,
      message: `malformed response body: ${JSON.stringify(redactAndCut(text, secrets, 80))}`,
      isRetryable: false,
    });
  }
}

export function shapeError(provider: string, field: string, message: string): PortOutputError {
  return new PortOutputError({ port: 'searchEngine', provider, field, message });
}
