import { AbortedError, InvalidArgumentError } from '../errors';
import type { Clock } from '../../ports/clock';

const WINDOW_MS = 60_000;

/**
 * Requests-per-minute and tokens-per-minute limits over a sliding one-minute window: `acquire`
 * waits until one more request of `tokens` tokens fits in the last minute.
 */
export class RateLimiter {
  private readonly events: Array<{ at: number; tokens: number }> = [];
  private readonly waiters: Array<{
    tokens: number;
    resolve: () => void;
    reject: (error: unknown) => void;
    detach: () => void;
  }> = [];
  private timer: AbortController | null = null;

  constructor(
    private readonly clock: Clock,
    readonly requestsPerMinute: number | null,
    readonly tokensPerMinute: number | null,
  ) {
    if (requestsPerMinute !== null && !(Number.isFinite(requestsPerMinute) && requestsPerMinute >= 1)) {
      throw new InvalidArgumentError({
        argument: 'requestsPerMinute',
        message: `must be a number >= 1 or null, got ${requestsPerMinute}`,
      });
    }
    if (tokensPerMinute !== null && !(tokensPerMinute > 0))
      throw new InvalidArgumentError({
        argument: 'tokensPerMinute',
        message: `must be > 0 or null, got ${tokensPerMinute}`,
      });
  }

  /**
   * Waits for room, first come first served. An aborted waiter leaves the queue at once. A
   * request larger than the whole token budget is let through when the window is empty.
   */
  acquire(tokens: number, signal?: AbortSignal): Promise<void> {
    if (this.requestsPerMinute === null && this.tokensPerMinute === null) return Promise.resolve();
    if (signal?.aborted)
      return Promise.reject(new AbortedError({ what: 'waiting for the rate limit', cause: signal.reason }));
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(new AbortedError({ what: 'waiting for the rate limit', cause: signal!.reason }));
        this.pump();
      };
      const waiter = { tokens, resolve, reject, detach: () => signal?.removeEventListener('abort', onAbort) };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
      this.pump();
    });
  }

  /** Lets waiters through in order while there is room; otherwise sleeps until the window moves. */
  private pump(): void {
    const now = this.clock.now();
    while (this.events.length > 0 && this.events[0]!.at <= now - WINDOW_MS) this.events.shift();
    while (this.waiters.length > 0) {
      const next = this.waiters[0]!;
      const used = this.events.reduce((sum, e) => sum + e.tokens, 0);
      const requestsOk = this.requestsPerMinute === null || this.events.length < this.requestsPerMinute;
      const tokensOk =
        this.tokensPerMinute === null ||
        used + next.tokens <= this.tokensPerMinute ||
        this.events.length === 0;
      if (!(requestsOk && tokensOk)) break;
      this.waiters.shift();
      this.events.push({ at: now, tokens: next.tokens });
      next.detach();
      next.resolve();
    }
    this.timer?.abort();
    this.timer = null;
    if (this.waiters.length > 0 && this.events.length > 0) {
      const timer = new AbortController();
      this.timer = timer;
      const wait = Math.max(1, this.events[0]!.at + WINDOW_MS - now);
      this.clock.sleep(wait, timer.signal).then(
        () => {
          if (this.timer === timer) {
            this.timer = null;
            this.pump();
          }
        },
        () => undefined,
      );
    }
  }
}
