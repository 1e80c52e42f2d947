import { AbortScope } from '../concurrency/abort-scope';
import { createSystemClock } from '../concurrency/clock';
import { RateLimiter } from '../concurrency/rate-limiter';
import { Semaphore } from '../concurrency/semaphore';
import {
  AbortedError,
  PortOutputError,
  ProviderCallError,
  type PortName,
  type SearcherError,
} from '../errors';
import type { Clock } from '../../ports/clock';
import { resolveCallPolicy, type CallPolicy } from './call-policy';
import { asCallError } from './failures';
import { estimateTokens } from './token-estimate';

/** What the reliability layer depends on besides the call, injectable for deterministic tests. */
export interface ReliabilityDeps {
  clock?: Clock;
  /** In [0, 1): the jitter source (inject for deterministic tests). */
  random?: () => number;
  /** Tokens a call will use, for the tokens-per-minute limit (default: `estimateTokens(args)`). */
  estimateTokens?: (operation: string, args: readonly unknown[]) => number;
  /** Sees every retry: the operation, the attempt number, the error, the delay before the next attempt. */
  onRetry?: (info: { operation: string; attempt: number; error: ProviderCallError; delayMs: number }) => void;
}

export interface ReliableCallOptions {
  /** The call's arguments, for the token estimate of the tokens-per-minute limit. */
  args?: readonly unknown[];
  signal?: AbortSignal;
}

/**
 * One port's calls under one policy: a concurrency cap, RPM/TPM limits, a timeout per attempt,
 * retries with backoff, and failure typing. Every call of the port goes through the same caller,
 * so the caps and limits hold across all of them.
 */
export interface ReliableCaller {
  readonly port: PortName;
  readonly provider: string;
  readonly policy: Readonly<CallPolicy>;
  /**
   * Runs `run(signal)` until it succeeds, fails in a way a retry cannot mend, runs out of
   * retries, or the caller's signal fires. `run` must pass the signal on: it fires on the
   * caller's abort and on the attempt's timeout, and the attempt is abandoned at that moment even
   * if `run` ignores it.
   */
  call<T>(
    operation: string,
    run: (signal: AbortSignal) => Promise<T>,
    options?: ReliableCallOptions,
  ): Promise<T>;
}

/** `judge 'x' failed (status 500): boom` -> `boom`, to re-wrap without repeating the prefix. */
function stripPrefix(message: string): string {
  const index = message.indexOf(': ');
  return index >= 0 ? message.slice(index + 2) : message;
}

// Why an attempt's scope is released, made once (an Error's stack at every call is not free).
const ATTEMPT_FINISHED = new Error('attempt finished');
const ATTEMPT_ENDED = new Error('attempt ended');

/**
 * The one reliability rule of the SDK (docs/method.md#provider-calls): per-attempt timeout,
 * bounded retries of retryable failures (408/409/429/5xx, connection errors, timeouts) with
 * exponential backoff and jitter honouring Retry-After up to `maxRetryAfterMs`, a concurrency
 * cap and requests/tokens-per-minute limits, the caller's AbortSignal throughout. Non-retryable
 * failures (a 400, an unusable answer) fail at once. Adapters stay simple: one attempt, typed errors.
 */
export function createReliableCaller(
  port: PortName,
  provider: string,
  policy: Partial<CallPolicy> = {},
  deps: ReliabilityDeps = {},
): ReliableCaller {
  const settings = resolveCallPolicy(port, policy);
  const clock = deps.clock ?? createSystemClock();
  const random = deps.random ?? Math.random;
  const slots =
    settings.maxConcurrent === null ? null : new Semaphore(settings.maxConcurrent, `${port}.maxConcurrent`);
  const limiter = new RateLimiter(clock, settings.requestsPerMinute, settings.tokensPerMinute);
  const aborted = (outer: AbortSignal | undefined, cause?: unknown) =>
    new AbortedError({ what: `${port} '${provider}' call`, cause: cause ?? outer?.reason });

  const attempt = async <T>(
    run: (signal: AbortSignal) => Promise<T>,
    outer: AbortSignal | undefined,
  ): Promise<T> => {
    const timeout = new AbortScope(clock, [outer], {
      ms: settings.timeoutMs,
      label: 'timeout',
      reason: () => new Error(`timed out after ${settings.timeoutMs} ms`),
    });
    const signal = timeout.signal;
    let settled = false;
    try {
      // The race makes a timeout effective even against an adapter that ignores its signal.
      const result = await new Promise<T>((resolve, reject) => {
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
        run(signal).then(resolve, reject);
      });
      settled = true;
      return result;
    } catch (error) {
      if (outer?.aborted) throw aborted(outer);
      if (timeout.firedDeadline)
        throw new ProviderCallError({
          port,
          provider,
          message: `timed out after ${settings.timeoutMs} ms`,
          isRetryable: true,
          cause: error,
        });
      throw asCallError(error, port, provider);
    } finally {
      // Whatever the attempt left running (sibling requests of a failed one) stops before a retry,
      // and the attempt's signal is released from `outer`.
      timeout.dispose({ release: true, reason: settled ? ATTEMPT_FINISHED : ATTEMPT_ENDED });
    }
  };

  return {
    port,
    provider,
    policy: settings,
    async call<T>(
      operation: string,
      run: (signal: AbortSignal) => Promise<T>,
      options: ReliableCallOptions = {},
    ): Promise<T> {
      const outer = options.signal;
      const args = options.args ?? [];
      const tokens = deps.estimateTokens ? deps.estimateTokens(operation, args) : estimateTokens(args);
      for (let n = 0; ; n++) {
        // An already-aborted signal never fires 'abort' again: check it before every attempt.
        if (outer?.aborted) throw aborted(outer);
        // The slot first, then the rate limit: a request is counted when it is sent, not while it
        // waits for a slot (which would let it land in a later window than the one it counted in).
        if (slots) await slots.acquire(outer);
        try {
          await limiter.acquire(tokens, outer);
        } catch (error) {
          slots?.release();
          throw aborted(outer, error);
        }
        if (outer?.aborted) {
          slots?.release();
          throw aborted(outer);
        }
        let failure: SearcherError;
        try {
          return await attempt(run, outer);
        } catch (error) {
          if (AbortedError.isInstance(error)) throw error;
          failure = error as SearcherError;
        } finally {
          slots?.release();
        }
        const retryable =
          ProviderCallError.isInstance(failure) &&
          failure.isRetryable &&
          !PortOutputError.isInstance(failure);
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
        const providerFailure = failure as ProviderCallError;
        const retryAfter = providerFailure.retryAfterMs;
        const delayMs =
          retryAfter !== undefined && retryAfter > 0 && retryAfter <= settings.maxRetryAfterMs
            ? retryAfter
            : Math.min(settings.initialRetryDelayMs * 2 ** n, settings.maxRetryDelayMs) *
              (1 - random() * 0.25);
        deps.onRetry?.({ operation, attempt: n + 1, error: providerFailure, delayMs });
        try {
          await clock.sleep(delayMs, outer);
        } catch {
          throw aborted(outer);
        }
      }
    },
  };
}
