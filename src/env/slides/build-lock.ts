import { open, readFile, rm, stat } from 'node:fs/promises';

/** How long an empty lock file (its owner died between creating it and writing its pid) is waited for. */
const EMPTY_LOCK_STALE_MS = 10_000;
const POLL_MS = 100;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but is not ours to signal.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether the lock at `path` was left by a process that no longer runs. */
async function stale(path: string): Promise<boolean> {
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) return false; // released meanwhile: try again
  const pid = Number(text);
  if (Number.isInteger(pid) && pid > 0) return !alive(pid);
  const info = await stat(path).catch(() => null);
  return info !== null && Date.now() - info.mtimeMs > EMPTY_LOCK_STALE_MS;
}

/**
 * Runs `work` while holding the lock file `path` (created exclusively, holding this process's pid),
 * so that processes sharing a cache folder (two `serve-env` started at once, a run and a bench)
 * build it one at a time: the others wait, then find it built. A lock whose process died is taken over.
 */
export async function withFileLock<T>(path: string, work: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      const handle = await open(path, 'wx');
      try {
        await handle.writeFile(String(process.pid));
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      if (await stale(path)) await rm(path, { force: true });
      else await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
  try {
    return await work();
  } finally {
    await rm(path, { force: true });
  }
}
