import { AbortedError } from '../errors';
import type { Clock } from '../../ports/clock';

// Reasons for letting go of a finished scope, made once: capturing an Error's stack at every call
// cost more than the rest of the scope (serve-env makes four calls an episode, hundreds a second).
const DEADLINE_DROPPED = new Error('scope disposed: its deadline no longer applies');
const SCOPE_RELEASED = new Error('scope released');

/**
 * An abort scope: its signal fires when any parent's does, when `abort` is called, or when its
 * own deadline on `clock` passes (then `firedDeadline` names it). Parents are joined with
 * AbortSignal.any, which adds no listener to them: a step's or a caller's signal is shared by
 * hundreds of calls, and listeners on it would pile up past Node's warning threshold.
 * `dispose()` stops the deadline timer and, with `{ release: true }`, also aborts the scope's own
 * signal so that AbortSignal.any drops it from its parents (a finished call must not stay
 * attached to a long-lived parent).
 */
export class AbortScope {
  private readonly own = new AbortController();
  private readonly timer = new AbortController();
  readonly signal: AbortSignal;
  /** The label of the deadline that fired, if one did. */
  firedDeadline: string | null = null;

  constructor(
    clock: Clock,
    parents: ReadonlyArray<AbortSignal | undefined>,
    deadline: { ms: number | null; label: string; reason?: () => unknown } | null = null,
  ) {
    const joined = parents.filter((p): p is AbortSignal => p !== undefined);
    this.signal = joined.length > 0 ? AbortSignal.any([...joined, this.own.signal]) : this.own.signal;
    if (deadline && deadline.ms !== null && Number.isFinite(deadline.ms)) {
      clock.sleep(deadline.ms, this.timer.signal).then(
        () => {
          if (this.signal.aborted) return;
          this.firedDeadline = deadline.label;
          this.own.abort(deadline.reason ? deadline.reason() : new AbortedError({ what: deadline.label }));
        },
        () => undefined,
      );
    }
  }

  /** Aborts the scope (and everything running under its signal). */
  abort(reason?: unknown): void {
    this.own.abort(reason);
  }

  dispose(options: { release?: boolean; reason?: unknown } = {}): void {
    this.timer.abort(DEADLINE_DROPPED);
    if (options.release && !this.own.signal.aborted) this.own.abort(options.reason ?? SCOPE_RELEASED);
  }
}
