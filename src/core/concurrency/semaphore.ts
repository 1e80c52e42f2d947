import { AbortedError, InvalidArgumentError } from '../errors';

/** A counting semaphore with FIFO waiters and peak accounting (for the pipeline's bounds). */
export class Semaphore {
  private active = 0;
  private peakActive = 0;
  private readonly waiters: Array<{ grant: () => void; reject: (error: unknown) => void }> = [];

  constructor(
    readonly limit: number,
    readonly name = 'semaphore',
  ) {
    if (!(Number.isInteger(limit) && limit >= 1))
      throw new InvalidArgumentError({
        argument: `${name}.maxConcurrent`,
        message: `must be an integer >= 1, got ${String(limit)}`,
      });
  }

  get inFlight(): number {
    return this.active;
  }

  get peak(): number {
    return this.peakActive;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  async acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw new AbortedError({ what: `waiting for ${this.name}`, cause: signal.reason });
    if (this.active < this.limit) {
      this.take();
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          this.take();
          resolve();
        },
        reject,
      };
      const onAbort = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(new AbortedError({ what: `waiting for ${this.name}`, cause: signal!.reason }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  release(): void {
    if (this.active <= 0) throw new Error(`${this.name}: release without acquire`);
    this.active--;
    this.waiters.shift()?.grant();
  }

  /** Runs `task` holding one slot. */
  async use<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.acquire(signal);
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  private take(): void {
    this.active++;
    this.peakActive = Math.max(this.peakActive, this.active);
  }
}
