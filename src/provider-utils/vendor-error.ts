import { isConnectionError } from '../core/calls/failures';
import { AbortedError, ProviderCallError, SearcherError, type PortName } from '../core/errors';
import { redactSecrets } from './redact';
import { parseRetryAfter, type HeadersLike } from './retry-after';

/**
 * What `toProviderError` maps: the port and provider that failed and what the vendor's SDK threw.
 */
export interface VendorFailure {
  port: PortName;
  provider: string;
  /** What the vendor SDK threw. */
  error: unknown;
  /** The call's signal: a fired signal makes any failure an abort. */
  signal?: AbortSignal | undefined;
  /** Keys and auth header values, kept out of the message. */
  secrets?: ReadonlyArray<string | undefined>;
  /** The HTTP status the SDK reported, if it got that far (default: the error's own numeric `status`, as openai-node's APIError has). */
  status?: number | undefined;
  /** The response headers (default: the error's own `headers`). */
  headers?: HeadersLike | undefined;
  /** The provider's own "come back later" hint, used when the headers have no Retry-After. */
  retryAfterMs?: number | undefined;
  /** The SDK's own abort error type matched. */
  aborted?: boolean;
  /** The SDK's own connection error type matched. */
  connectionFailure?: boolean;
}

/**
 * The one mapping of a vendor SDK's failure to the SDK's typed errors: an abort is an
 * AbortedError; an HTTP status keeps it and the server's Retry-After (retryable per
 * 408/409/429/5xx); a body that does not parse is not retried (the call may have run and been
 * billed); anything else is retried only if it is a connection failure. No secret survives in
 * the message. A SearcherError the adapter's own fetch threw (a refused redirect, a body over
 * its cap) comes back as it is, even when the SDK wrapped it as a connection error.
 */
export function toProviderError(failure: VendorFailure): SearcherError {
  const { port, provider, error, signal } = failure;
  if (signal?.aborted || failure.aborted)
    return new AbortedError({ what: `${port} '${provider}' call`, cause: signal?.reason });
  const typed = searcherErrorIn(error);
  if (typed) return typed;
  const message = redactSecrets(
    error instanceof Error ? error.message : String(error),
    failure.secrets ?? [],
  );
  const carried = error as { status?: unknown; headers?: unknown } | null;
  const status =
    failure.status ??
    (typeof carried?.status === 'number' && carried.status >= 100 ? carried.status : undefined);
  if (status !== undefined) {
    const headers = failure.headers ?? (carried?.headers as HeadersLike | undefined);
    return new ProviderCallError({
      port,
      provider,
      status,
      retryAfterMs: parseRetryAfter(headers) ?? failure.retryAfterMs,
      message,
    });
  }
  if (error instanceof SyntaxError)
    return new ProviderCallError({
      port,
      provider,
      message: `malformed response body: ${message}`,
      isRetryable: false,
    });
  return new ProviderCallError({
    port,
    provider,
    message,
    isRetryable: failure.connectionFailure === true || isConnectionError(error),
  });
}

/** The first SearcherError along an error's cause chain (an SDK wraps what its fetch threw). */
function searcherErrorIn(error: unknown): SearcherError | undefined {
  let current = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    if (SearcherError.isInstance(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
