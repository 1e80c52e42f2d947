import {
  AbortedError,
  AdapterError,
  PortOutputError,
  ProviderCallError,
  SearcherError,
  type PortName,
} from '../errors';
import type { RewardFailure } from '../reward/combine';

/** Connection-level failures worth retrying when an adapter did not type them itself. */
export function isConnectionError(error: unknown): boolean {
  const e = error as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (
    /^(ECONNRESET|ECONNREFUSED|ECONNABORTED|ETIMEDOUT|EPIPE|EAI_AGAIN|ENOTFOUND|UND_ERR_(SOCKET|CONNECT_TIMEOUT|HEADERS_TIMEOUT|BODY_TIMEOUT|CLOSED))$/.test(
      code,
    )
  )
    return true;
  if (e.name === 'TypeError' && e.message === 'fetch failed') return true;
  if (typeof e.name === 'string' && /Connection/.test(e.name)) return true;
  return e.cause !== undefined && e.cause !== error && isConnectionError(e.cause);
}

/**
 * The typed form of any failure of a port call. Errors of the SDK's family pass through; an
 * untyped connection failure becomes a retryable ProviderCallError; any other untyped exception
 * is the adapter's own fault (an AdapterError, never retried: it would fail the same way again).
 */
export function asCallError(error: unknown, port: PortName, provider: string): SearcherError {
  if (SearcherError.isInstance(error)) return error;
  if (isConnectionError(error)) {
    const message = error instanceof Error ? error.message : String(error);
    return new ProviderCallError({ port, provider, message, isRetryable: true, cause: error });
  }
  return new AdapterError({ port, provider, error });
}

/** The cause of a failed call, as recorded with a missing reward. */
export function classifyFailure(stage: RewardFailure['stage'], error: unknown): RewardFailure {
  const message = error instanceof Error ? error.message : String(error);
  if (AbortedError.isInstance(error)) return { stage, kind: 'aborted', message };
  if (PortOutputError.isInstance(error)) return { stage, kind: 'invalid_output', message };
  if (ProviderCallError.isInstance(error))
    return {
      stage,
      kind: error.status === 408 || /timed? ?out/i.test(message) ? 'timeout' : 'provider_error',
      message,
    };
  if (AdapterError.isInstance(error)) return { stage, kind: 'adapter_error', message };
  return { stage, kind: 'error', message };
}
