import { AbortedError, ProviderCallError } from '../../core/errors';
import { parseRetryAfter } from '../../provider-utils/retry-after';
import { redactAndCut } from '../../provider-utils/redact';

/** An MLflow REST error body: `{"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "..."}`. */
export function mlflowErrorCode(error: unknown): string | undefined {
  if (!ProviderCallError.isInstance(error)) return undefined;
  const code = (error.cause as { mlflowErrorCode?: unknown } | undefined)?.mlflowErrorCode;
  return typeof code === 'string' ? code : undefined;
}

/**
 * One call of MLflow's REST API (`/api/2.0/mlflow/...`) with fetch, one attempt: a status >= 400
 * is a ProviderCallError with the status, Retry-After and MLflow's error code and message; a
 * connection failure is retryable; secrets never reach a message.
 */
export async function mlflowCall(options: {
  baseUrl: string;
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  body?: unknown;
  headers: Record<string, string>;
  secrets: ReadonlyArray<string | undefined>;
  signal?: AbortSignal | undefined;
  /**
   * Sending it again changes nothing (a read, a log-batch: MLflow keeps one metric per key, step,
   * time and value; a status update): a malformed answer is then worth a retry.
   */
  idempotent: boolean;
}): Promise<Record<string, unknown>> {
  const { secrets, signal } = options;
  const url = new URL(
    `api/2.0/mlflow/${options.path}`,
    options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`,
  );
  for (const [key, value] of Object.entries(options.query ?? {})) url.searchParams.set(key, value);
  const fail = (
    message: string,
    extra: {
      status?: number;
      isRetryable?: boolean;
      retryAfterMs?: number | undefined;
      cause?: unknown;
    } = {},
  ) =>
    new ProviderCallError({
      port: 'tracker',
      provider: 'mlflow',
      message: redactAndCut(message, secrets, 400),
      ...extra,
    });
  let response: Response;
  try {
    response = await fetch(url, {
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
    if (signal?.aborted) throw new AbortedError({ what: "tracker 'mlflow' call", cause: signal.reason });
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw fail(
      `${options.path}: connection failed: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
      {
        isRetryable: true,
      },
    );
  }
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    if (signal?.aborted) throw new AbortedError({ what: "tracker 'mlflow' call", cause: signal.reason });
    throw fail(`${options.path}: the response body was cut off: ${(error as Error).message}`, {
      isRetryable: true,
    });
  }
  if (response.status >= 400) {
    let detail = text;
    let code: string | undefined;
    try {
      const body = JSON.parse(text) as { error_code?: unknown; message?: unknown };
      if (typeof body.error_code === 'string') {
        code = body.error_code;
        detail = `${code}: ${String(body.message ?? '')}`;
      }
    } catch {}
    throw fail(`${options.path}: ${detail || `HTTP ${response.status}`}`, {
      status: response.status,
      retryAfterMs: parseRetryAfter(response.headers),
      ...(code !== undefined && { cause: { mlflowErrorCode: code } }),
    });
  }
  try {
    const body = text.trim() === '' ? {} : (JSON.parse(text) as unknown);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('not an object');
    return body as Record<string, unknown>;
  } catch {
    throw fail(`${options.path}: malformed response body: ${JSON.stringify(text.slice(0, 80))}`, {
      isRetryable: options.idempotent,
    });
  }
}
