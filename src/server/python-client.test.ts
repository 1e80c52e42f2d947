import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createEnvServer } from './env-server';
import { mockServedEnvironment } from '../../test/support/fixture-environment';

// A real Python client (the `websockets` package: the pinned one of python/requirements.txt, which
// .ci/run gives as SEARCHER_RL_PYTHON, or Debian's python3-websockets) through whole episodes;
// skipped where no such Python is installed.
const PYTHON = process.env.SEARCHER_RL_PYTHON ?? '/usr/bin/python3';
const hasWebsockets = (() => {
  try {
    execFileSync(PYTHON, ['-c', 'import websockets'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
// The client is a module of the trainer-side package (python/src/searcher_rl_trainers).
const packageRoot = fileURLToPath(new URL('../../python/src', import.meta.url));
const client = ['-m', 'searcher_rl_trainers.ws_episodes'];
const env = { ...process.env, PYTHONPATH: packageRoot };

describe.runIf(hasWebsockets)('a Python OpenEnv client', () => {
  it('runs whole episodes concurrently, with the token, and gets their rewards', async () => {
    // One trainer opening six sessions at once: its share is raised from the default (half of
    // maxSessions) to the whole server, as a lone trainer's launcher does.
    const server = createEnvServer(mockServedEnvironment(), {
      token: 'tok',
      maxSessions: 8,
      maxSessionsPerClient: 8,
    });
    const port = await server.listen(0);
    try {
      const stdout = await new Promise<string>((resolve, reject) =>
        execFile(
          PYTHON,
          [...client, `ws://127.0.0.1:${port}`, '--episodes', '6', '--token', 'tok'],
          { timeout: 20_000, env },
          (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
        ),
      );
      const lines = stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(lines.at(-1)).toEqual({ episodes: 6, done: 6, rewarded: 6 });
      for (const line of lines.slice(0, -1))
        expect(line).toMatchObject({ done: true, reward_status: 'ok', terminated: 'complete', steps: 2 });
      expect(lines.find((l) => l.task === 'acme-revenue')?.reward).toBe(1);
    } finally {
      await server.close();
    }
  });
});
