import type { RunOptions, RunProgress } from '../index';

/** A progress line: a bar with step, figures and ETA on a terminal; plain lines otherwise. */
export interface Progress {
  update(done: number, detail?: string): void;
  done(detail?: string): void;
  /** On a TTY: erase the bar's line (before another line is printed) and draw it again after. */
  clear(): void;
  redraw(): void;
  /** On a TTY: ends the bar's line where it is (before an error or a stop message). */
  end(): void;
}

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

const formatSeconds = (seconds: number) => {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
};

/**
 * `label [#####.....] 12/40 detail ETA 1m05s`, redrawn in place on a TTY. Without a TTY (CI, a
 * pipe) it prints a plain line every `every` updates and at the end, so logs stay readable.
 */
export function createProgress(
  label: string,
  total: number,
  stream: ProgressStream = process.stderr,
  options: { every?: number; now?: () => number } = {},
): Progress {
  const now = options.now ?? (() => performance.now());
  const started = now();
  const tty = stream.isTTY === true;
  const every = options.every ?? Math.max(1, Math.ceil(total / 10));
  let last = '';
  const line = (done: number, detail: string) => {
    const elapsed = (now() - started) / 1000;
    const eta = done > 0 ? (elapsed / done) * (total - done) : NaN;
    const width = 24;
    const filled = total > 0 ? Math.round((done / total) * width) : width;
    const bar = tty ? ` [${'#'.repeat(filled)}${'.'.repeat(width - filled)}]` : '';
    return `${label}${bar} ${done}/${total}${detail ? ` ${detail}` : ''} ETA ${formatSeconds(eta)}`;
  };
  // Whether the bar's line is on the terminal unterminated (a TTY bar between updates).
  let open = false;
  let drawn = '';
  // Erase to the end of the line: a shorter line never keeps the tail of a longer one.
  const ERASE = '\x1b[K';
  return {
    update(done, detail = '') {
      last = detail;
      if (tty) {
        const text = line(done, detail);
        const max = (stream.columns ?? 120) - 1;
        drawn = text.length > max ? text.slice(0, max) : text;
        stream.write(`\r${drawn}${ERASE}`);
        open = true;
      } else if (done % every === 0 || done === total) stream.write(`${line(done, detail)}\n`);
    },
    done(detail) {
      const elapsed = (now() - started) / 1000;
      const text = `${label} done in ${formatSeconds(elapsed)}${(detail ?? last) ? ` ${detail ?? last}` : ''}`;
      stream.write(tty ? `\r${ERASE}${text}\n` : `${text}\n`);
      open = false;
    },
    clear() {
      if (open) stream.write(`\r${ERASE}`);
    },
    redraw() {
      if (open) stream.write(`\r${drawn}${ERASE}`);
    },
    end() {
      if (open) stream.write('\n');
      open = false;
    },
  };
}

/**
 * How the CLI follows a run (`RunOptions`): log lines to `log`, each task's progress as a bar (a
 * TTY) or plain lines on `stream`.
 */
export function cliRunOptions(
  log: (line: string) => void,
  stream: ProgressStream = process.stderr,
): Pick<RunOptions, 'onLog' | 'onProgress'> & { endLine(): void } {
  const bars = new Map<string, Progress>();
  return {
    // A log line goes between bars, never onto one: the open bar is erased, the line printed, the bar drawn again.
    onLog(line) {
      for (const bar of bars.values()) bar.clear();
      log(line);
      for (const bar of bars.values()) bar.redraw();
    },
    onProgress(event: RunProgress) {
      let bar = bars.get(event.task);
      if (!bar) bars.set(event.task, (bar = createProgress(event.task, event.total, stream)));
      if (event.finished) {
        bar.done(event.detail);
        bars.delete(event.task);
      } else bar.update(event.done, event.detail);
    },
    /** Ends an open bar's line (before an error or a stop message). */
    endLine() {
      for (const bar of bars.values()) bar.end();
    },
  };
}
