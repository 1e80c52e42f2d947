import { AbortedError, PortOutputError, ProviderCallError, SearcherError, type PortName } from '../errors';
import { createSystemClock } from '../pipeline/clock';
import { Semaphore } from '../pipeline/semaphore';
import type { Clock } from '../../ports/clock';
import { RateLimiter } from './rate-limiter';

export interface ReliabilityPolicy {
  /** Per attempt; `null`: none. */
  timeoutMs: number | null;
  /** Retries after the first attempt, for retryable failures only. */
  maxRetries: number;
  /** Backoff: min(initial * 2^n, max), times a jitter in [0.75, 1] (openai-node's rule). */
  initialRetryDelayMs: number;
  maxRetryDelayMs: number;
  /** A server's Retry-After / retry-after-ms is honoured when in (0, this]. */
  maxRetryAfterMs: number;
  maxConcurrent: number | null;
  requestsPerMinute: number | null;
  tokensPerMinute: number | null;
}

export const DEFAULT_RELIABILITY_POLICY: Readonly<ReliabilityPolicy> = Object.freeze({
  timeoutMs: 60_000,
  maxRetries: 2,
  initialRetryDelayMs: 500,
  maxRetryDelayMs: 8_000,
  maxRetryAfterMs: 60_000,
  maxConcurrent: null,
  requestsPerMinute: null,
  tokensPerMinute: null,
});

export interface ReliabilityDeps {
  clock?: Clock;
  /** In [0, 1): the jitter source (inject for deterministic tests). */
  random?: () => number;
  /** Tokens a call will use, for the tokens-per-minute limit (default: characters of string arguments / 4). */
  estimateTokens?: (method: string, args: readonly unknown[]) => number;
  /** Sees every retry: attempt number, the error, the delay before the next attempt. */
  onRetry?: (info: { method: string; attempt: number; error: ProviderCallError; delayMs: number }) => void;
}

/** Where each port method takes its options (with the AbortSignal). */
const OPTIONS_INDEX: Record<string, number> = {
  doSearch: 1,
  doAnswer: 2,
  doScore: 3,
  doCrop: 2,
  doEmbed: 1,
  doAppend: 1,
  doQuery: 1,
  doPutBlob: 3,
  doGetBlob: 2,
  doComplete: 1,
};

/**
 * Where a `do*` method takes its options: known port methods by position; otherwise the last
 * argument only if it is a plain object with a `signal` key, else a new argument after the rest
 * (guessing wrong would send the signal inside a request body and never cancel the call).
 */
function optionsIndexOf(name: string, args: readonly unknown[]): number {
  const known = OPTIONS_INDEX[name];
  if (known !== undefined) return known;
  const last = args[args.length - 1];
  const isOptions = typeof last === 'object' && last !== null && !Array.isArray(last) && Object.getPrototypeOf(last) === Object.prototype && 'signal' in last;
  return isOptions ? args.length - 1 : args.length;
}

/** Images cost tokens too: a flat estimate per image (a high-detail page is several hundred). */
const TOKENS_PER_IMAGE = 800;

/**
 * Tokens a call will count against a TPM limit: characters of strings / 4, token-id arrays as
 * they are, a flat amount per image, plus the output budget it asks for (`max_tokens`,
 * `max_output_tokens`, `maxOutputTokens`), as providers count output toward TPM.
 */
function defaultEstimate(_method: string, args: readonly unknown[]): number {
  let tokens = 0;
  let chars = 0;
  const visit = (value: unknown, key: string, depth: number) => {
    if (typeof value === 'string') chars += value.length;
    else if (typeof value === 'number') {
      if (key === 'max_tokens' || key === 'max_output_tokens' || key === 'maxOutputTokens') tokens += value;
    } else if (value instanceof Uint8Array) tokens += TOKENS_PER_IMAGE;
    else if (Array.isArray(value)) {
      if (value.length > 0 && value.every((v) => typeof v === 'number')) tokens += value.length;
      else if (depth < 4) value.forEach((v) => visit(v, '', depth + 1));
    } else if (value && typeof value === 'object' && depth < 4 && !(value instanceof AbortSignal)) {
      for (const [k, v] of Object.entries(value)) visit(v, k, depth + 1);
    }
  };
  args.forEach((a) => visit(a, '', 0));
  return tokens + Math.ceil(chars / 4);
}

/** Connection-level failures worth retrying when an adapter did not type them itself. */
export function isConnectionError(error: unknown): boolean {
  const e = error as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown } | null;
  if (!e || typeof e !== 'object') return false;
  const code = typeof e.code === 'string' ? e.code : '';
  if (/^(ECONNRESET|ECONNREFUSED|ECONNABORTED|ETIMEDOUT|EPIPE|EAI_AGAIN|ENOTFOUND|UND_ERR_(SOCKET|CONNECT_TIMEOUT|HEADERS_TIMEOUT|BODY_TIMEOUT|CLOSED))$/.test(code)) return true;
  if (e.name === 'TypeError' && e.message === 'fetch failed') return true;
  if (typeof e.name === 'string' && /Connection/.test(e.name)) return true;
  return e.cause !== undefined && e.cause !== error && isConnectionError(e.cause);
}

/** Typed, retry-aware view of any failure of an attempt. */
function asProviderError(error: unknown, port: PortName, provider: string): ProviderCallError | SearcherError {
  if (ProviderCallError.isInstance(error)) return error;
  if (SearcherError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  // An untyped exception is retried only if it is a connection failure; anything else (an
  // adapter bug, a bad header) would fail the same way again.
  return new ProviderCallError({ port, provider, message, isRetryable: isConnectionError(error), cause: error });
}

/**
 * The one reliability layer for every port (DESIGN "Provider calls"): wraps each `do*` method
 * with a per-attempt timeout, bounded retries with exponential backoff and jitter for retryable
 * failures (408/409/429/5xx, connection errors, timeouts) honouring Retry-After up to
 * `maxRetryAfterMs`, a concurrency cap and requests/tokens-per-minute limits. The caller's
 * AbortSignal cancels waits and attempts. Non-retryable failures (a 400, an unusable answer)
 * fail at once. Adapters stay simple: one attempt, typed errors.
 */
export function withReliability<T extends { provider: string }>(port: T, portName: PortName, policy: Partial<ReliabilityPolicy> = {}, deps: ReliabilityDeps = {}): T {
  const settings: ReliabilityPolicy = { ...DEFAULT_RELIABILITY_POLICY, ...policy };
  const clock = deps.clock ?? createSystemClock();
  const random = deps.random ?? Math.random;
  const estimate = deps.estimateTokens ?? defaultEstimate;
  const slots = settings.maxConcurrent === null ? null : new Semaphore(settings.maxConcurrent, `${portName}.maxConcurrent`);
  const limiter = new RateLimiter(clock, settings.requestsPerMinute, settings.tokensPerMinute);
  const provider = port.provider;

  const attempt = async (method: (...a: unknown[]) => Promise<unknown>, args: unknown[], optionsIndex: number, outer: AbortSignal | undefined) => {
    const controller = new AbortController();
    const timer = new AbortController();
    // AbortSignal.any adds no listener to `outer`, which many concurrent calls share (a group's
    // rollouts): listeners on it would pile up past Node's warning threshold.
    const signal = outer ? AbortSignal.any([outer, controller.signal]) : controller.signal;
    let timedOut = false;
    if (settings.timeoutMs !== null) {
      clock.sleep(settings.timeoutMs, timer.signal).then(
        () => {
          timedOut = true;
          controller.abort(new Error(`timed out after ${settings.timeoutMs} ms`));
        },
        () => undefined,
      );
    }
    const callArgs = [...args];
    const given = (callArgs[optionsIndex] as Record<string, unknown> | undefined) ?? {};
    while (callArgs.length < optionsIndex) callArgs.push(undefined);
    callArgs[optionsIndex] = { ...given, signal };
    let settled = false;
    try {
      // The race makes a timeout effective even against an adapter that ignores its signal.
      const result = await new Promise((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        method.apply(port, callArgs).then(resolve, reject);
      });
      settled = true;
      return result;
    } catch (error) {
      if (outer?.aborted) throw new AbortedError(`${portName} '${provider}' call`, { cause: outer.reason });
      if (timedOut) throw new ProviderCallError({ port: portName, provider, message: `timed out after ${settings.timeoutMs} ms`, isRetryable: true, cause: error });
      throw asProviderError(error, portName, provider);
    } finally {
      timer.abort();
      // Whatever the attempt left running (sibling requests of a failed one) stops before a retry;
      // aborting a finished attempt's signal too releases the combined signal from `outer`
      // (AbortSignal.any keeps it as a dependant of `outer` until then).
      controller.abort(new Error(settled ? 'attempt finished' : 'attempt ended'));
    }
  };

  const wrap = (name: string, method: (...a: unknown[]) => Promise<unknown>) =>
    async (...args: unknown[]) => {
      const optionsIndex = optionsIndexOf(name, args);
      const outer = (args[optionsIndex] as { signal?: AbortSignal } | undefined)?.signal;
      const tokens = estimate(name, args);
      for (let n = 0; ; n++) {
        // An already-aborted signal never fires 'abort' again: check it before every attempt.
        if (outer?.aborted) throw new AbortedError(`${portName} '${provider}' call`, { cause: outer.reason });
        // The slot first, then the rate limit: a request is counted when it is sent, not while it
        // waits for a slot (which would let it land in a later window than the one it counted in).
        if (slots) await slots.acquire(outer);
        try {
          await limiter.acquire(tokens, outer);
        } catch (error) {
          slots?.release();
          throw new AbortedError(`${portName} '${provider}' call`, { cause: error });
        }
        if (outer?.aborted) {
          slots?.release();
          throw new AbortedError(`${portName} '${provider}' call`, { cause: outer.reason });
        }
        let failure: ProviderCallError | SearcherError;
        try {
          return await attempt(method, args, optionsIndex, outer);
        } catch (error) {
          if (AbortedError.isInstance(error)) throw error;
          failure = error as ProviderCallError | SearcherError;
        } finally {
          slots?.release();
        }
        const retryable = ProviderCallError.isInstance(failure) && failure.isRetryable && !PortOutputError.isInstance(failure);
        if (!retryable || n >= settings.maxRetries) {
          if (n > 0 && ProviderCallError.isInstance(failure)) {
            throw new ProviderCallError({
              port: failure.port,
              provider: failure.provider,
              status: failure.status,
              isRetryable: failure.isRetryable,
              retryAfterMs: failure.retryAfterMs,
              message: `${stripPrefix(failure.message)} (after ${n + 1} attempts)`,
              cause: failure,
            });
          }
          throw failure;
        }
        const retryAfter = (failure as ProviderCallError).retryAfterMs;
        const delayMs =
          retryAfter !== undefined && retryAfter > 0 && retryAfter <= settings.maxRetryAfterMs
            ? retryAfter
            : Math.min(settings.initialRetryDelayMs * 2 ** n, settings.maxRetryDelayMs) * (1 - random() * 0.25);
        deps.onRetry?.({ method: name, attempt: n + 1, error: failure as ProviderCallError, delayMs });
        try {
          await clock.sleep(delayMs, outer);
        } catch {
          throw new AbortedError(`${portName} '${provider}' call`, { cause: outer?.reason });
        }
      }
    };

  const wrapped = Object.create(port) as Record<string, unknown>;
  for (let current: object | null = port; current && current !== Object.prototype; current = Object.getPrototypeOf(current)) {
    for (const name of Object.getOwnPropertyNames(current)) {
      const member = (port as Record<string, unknown>)[name];
      if (name.startsWith('do') && typeof member === 'function' && !(name in wrapped && Object.prototype.hasOwnProperty.call(wrapped, name))) {
        wrapped[name] = wrap(name, member as (...a: unknown[]) => Promise<unknown>);
      }
    }
  }
  return wrapped as T;
}

/** `judge 'x' failed (status 500): boom` -> `boom`, to re-wrap without repeating the prefix. */
function stripPrefix(message: string): string {
  const index = message.indexOf(': ');
  return index >= 0 ? message.slice(index + 2) : message;
}

/**
 * Parses Retry-After (seconds or an HTTP date) and retry-after-ms into milliseconds, as
 * openai-node does. `now` is for HTTP dates.
 */
export function parseRetryAfter(headers: { get(name: string): string | null } | Record<string, string | string[] | undefined> | undefined, now = Date.now()): number | undefined {
  if (!headers) return undefined;
  const get = (name: string): string | undefined => {
    if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(n: string): string | null }).get(name) ?? undefined;
    const value = (headers as Record<string, string | string[] | undefined>)[name] ?? (headers as Record<string, string | string[] | undefined>)[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  };
  const ms = get('retry-after-ms');
  if (ms !== undefined && Number.isFinite(Number.parseFloat(ms))) return Number.parseFloat(ms);
  const after = get('retry-after');
  if (after === undefined) return undefined;
  const seconds = Number.parseFloat(after);
  if (Number.isFinite(seconds)) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/** Replaces every occurrence of each secret (API keys) in a text. */
export function redactSecrets(text: string, secrets: ReadonlyArray<string | undefined>): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  return out;
}
