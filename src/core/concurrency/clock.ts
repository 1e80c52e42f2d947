import { AbortedError } from '../errors';
import type { Clock } from '../../ports/clock';

/** The reason a sleep rejects with when its signal fires. */
export function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new AbortedError({ what: 'sleep' });
}

/** setTimeout's largest delay; a longer one would fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

/** Wall-clock time: `performance.now()` and `setTimeout` (globals of every JavaScript runtime). */
export function createSystemClock(): Clock {
  return {
    now: () => performance.now(),
    sleep(ms, signal) {
      return new Promise<void>((resolve, reject) => {
        if (signal?.aborted) {
          reject(abortReason(signal));
          return;
        }
        const deadline = performance.now() + Math.max(0, ms);
        let timer: ReturnType<typeof setTimeout>;
        // Long sleeps are chained in steps setTimeout can hold.
        const arm = () => {
          const left = deadline - performance.now();
          if (left > MAX_TIMER_MS) timer = setTimeout(arm, MAX_TIMER_MS);
          else
            timer = setTimeout(
              () => {
                signal?.removeEventListener('abort', onAbort);
                resolve();
              },
              Math.max(0, left),
            );
        };
        const onAbort = () => {
          clearTimeout(timer);
          reject(abortReason(signal!));
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        arm();
      });
    },
  };
}
