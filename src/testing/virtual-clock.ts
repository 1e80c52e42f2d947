import { InvalidArgumentError } from '../core/errors';
import { abortReason } from '../core/concurrency/clock';
import type { Clock } from '../ports/clock';

interface Timer {
  at: number;
  order: number;
  resolve: () => void;
}

/**
 * A virtual clock for deterministic tests and simulations: time moves only when `advance` or
 * `run` moves it, and timers fire in time order (ties in creation order).
 */
export interface VirtualClock extends Clock {
  /** Moves time forward by `ms`, firing every timer due on the way (and letting their continuations run). */
  advance(ms: number): Promise<void>;
  /**
   * Runs `task` to completion, jumping time to the next timer whenever nothing else can happen.
   * Throws if the task is stuck with no timer left (a deadlock).
   */
  run<T>(task: Promise<T>): Promise<T>;
  /** Timers not yet fired. */
  readonly pendingTimers: number;
}

/** Lets every queued promise continuation run (one macrotask turn, a few times over). */
async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setTimeout(resolve, 0));
}

/** A virtual clock starting at `start` milliseconds. */
export function createVirtualClock(start = 0): VirtualClock {
  let now = start;
  let order = 0;
  const timers: Timer[] = [];
  const fireDue = () => {
    timers.sort((a, b) => a.at - b.at || a.order - b.order);
    while (timers.length > 0 && timers[0]!.at <= now) timers.shift()!.resolve();
  };
  const clock: VirtualClock = {
    now: () => now,
    get pendingTimers() {
      return timers.length;
    },
    sleep(ms, signal) {
      if (!Number.isFinite(ms))
        return Promise.reject(
          new InvalidArgumentError({ argument: 'ms', message: `must be finite, got ${ms}` }),
        );
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) {
          reject(abortReason(signal));
          return;
        }
        const timer: Timer = {
          at: now + Math.max(0, ms),
          order: order++,
          resolve: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        const onAbort = () => {
          const index = timers.indexOf(timer);
          if (index >= 0) timers.splice(index, 1);
          reject(abortReason(signal!));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        timers.push(timer);
      });
    },
    async advance(ms) {
      const target = now + ms;
      await flush();
      for (;;) {
        timers.sort((a, b) => a.at - b.at || a.order - b.order);
        const next = timers[0];
        if (!next || next.at > target) break;
        now = next.at;
        fireDue();
        await flush();
      }
      now = target;
    },
    async run(task) {
      let settled = false;
      let value: unknown;
      let failure: { error: unknown } | null = null;
      task.then(
        (v) => {
          settled = true;
          value = v;
        },
        (error) => {
          settled = true;
          failure = { error };
        },
      );
      for (;;) {
        await flush();
        if (settled) break;
        timers.sort((a, b) => a.at - b.at || a.order - b.order);
        const next = timers[0];
        if (!next)
          throw new Error('virtual clock: the task is waiting on something that is not a timer (deadlock)');
        now = Math.max(now, next.at);
        fireDue();
      }
      if (failure !== null) throw (failure as { error: unknown }).error;
      return value as Awaited<typeof task>;
    },
  };
  return clock;
}
