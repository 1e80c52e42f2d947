import type { RunOptions, RunProgress } from '../index';

/** A progress line: a bar with step, figures and ETA on a terminal; plain lines otherwise. */
export interface Progress {
  update(done: number, detail?: string): void;
  done(detail?: string): void;
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
  return {
    update(done, detail = '') {
      last = detail;
      if (tty) {
        const text = line(done, detail);
        const max = (stream.columns ?? 120) - 1;
        stream.write(
          `\r${text.length > max ? text.slice(0, max) : text.padEnd(Math.min(max, text.length + 2))}`,
        );
      } else if (done % every === 0 || done === total) stream.write(`${line(done, detail)}\n`);
    },
    done(detail) {
      const elapsed = (now() - started) / 1000;
      const text = `${label} done in ${formatSeconds(elapsed)}${(detail ?? last) ? ` ${detail ?? last}` : ''}`;
      stream.write(tty ? `\r${text}\n` : `${text}\n`);
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
): Pick<RunOptions, 'onLog' | 'onProgress'> {
  const bars = new Map<string, Progress>();
  return {
    onLog: log,
    onProgress(event: RunProgress) {
      let bar = bars.get(event.task);
      if (!bar) bars.set(event.task, (bar = createProgress(event.task, event.total, stream)));
      if (event.finished) {
        bar.done(event.detail);
        bars.delete(event.task);
      } else bar.update(event.done, event.detail);
    },
  };
}
