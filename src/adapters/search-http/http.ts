import { request } from 'undici';
import { AbortedError, PortOutputError, ProviderCallError } from '../../core/errors';
import { parseRetryAfter, redactSecrets, toProviderError } from '../../provider-utils/index';
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
}

/**
 * One HTTP attempt with undici, returning parsed JSON. Errors are typed for the core's
 * reliability layer: a status >= 400 keeps its status and Retry-After; a connection failure or a
 * malformed body is retryable; an abort is an AbortedError.
 */
export async function httpJson(options: HttpJsonOptions): Promise<unknown> {
  const { provider, signal } = options;
  const secrets = options.secrets ?? [];
  let response;
  try {
    response = await request(options.url, {
      method: options.method,
      headers: {
        accept: 'application/json',
        ...(options.body !== undefined && { 'content-type': 'application/json' }),
        ...options.headers,
      },
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
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
  let text: string;
  try {
    text = await response.body.text();
  } catch (error) {
    if (signal?.aborted)
      throw new AbortedError({ what: `searchEngine '${provider}' call`, cause: signal.reason });
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
