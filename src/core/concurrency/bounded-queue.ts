import { AbortedError, InvalidArgumentError } from '../errors';

/**
 * A FIFO with a fixed capacity: `push` waits while the queue is full (backpressure on the
 * producer), `shift` waits while it is empty. `close` lets consumers drain and then see `done`.
 */
export class BoundedQueue<T> {
  private readonly items: T[] = [];
  private readonly pushers: Array<() => void> = [];
  private readonly shifters: Array<() => void> = [];
  private closed = false;
  private peakSize = 0;

  constructor(
    readonly capacity: number,
    readonly name = 'queue',
  ) {
    if (!(Number.isInteger(capacity) && capacity >= 1))
      throw new InvalidArgumentError({
        argument: `${name}.capacity`,
        message: `must be an integer >= 1, got ${String(capacity)}`,
      });
  }

  get size(): number {
    return this.items.length;
  }

  get peak(): number {
    return this.peakSize;
  }

  async push(item: T, signal?: AbortSignal): Promise<void> {
    while (this.items.length >= this.capacity) {
      if (this.closed) throw new Error(`${this.name}: push after close`);
      await this.wait(this.pushers, signal);
    }
    if (this.closed) throw new Error(`${this.name}: push after close`);
    this.items.push(item);
    this.peakSize = Math.max(this.peakSize, this.items.length);
    this.shifters.shift()?.();
  }

  /** The next item, or `undefined` once the queue is closed and empty. */
  async shift(signal?: AbortSignal): Promise<T | undefined> {
    while (this.items.length === 0) {
      if (this.closed) return undefined;
      await this.wait(this.shifters, signal);
    }
    const item = this.items.shift()!;
    this.pushers.shift()?.();
    return item;
  }

  close(): void {
    this.closed = true;
    for (const wake of this.shifters.splice(0)) wake();
    for (const wake of this.pushers.splice(0)) wake();
  }

  private wait(list: Array<() => void>, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted)
      return Promise.reject(new AbortedError({ what: `waiting on ${this.name}`, cause: signal.reason }));
    return new Promise<void>((resolve, reject) => {
      const wake = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const index = list.indexOf(wake);
        if (index >= 0) list.splice(index, 1);
        reject(new AbortedError({ what: `waiting on ${this.name}`, cause: signal!.reason }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      list.push(wake);
    });
  }
}
