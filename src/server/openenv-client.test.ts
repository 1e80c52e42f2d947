import { execFile, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { mockServedEnvironment } from '../../test/support/fixture-environment';
import { createEnvServer } from './env-server';

// OpenEnv's released client (openenv-core, pinned in python/requirements.txt),
// unmodified, against a server with a token; skipped where no Python has openenv-core installed.
const PYTHON = process.env.SEARCHER_RL_PYTHON ?? '/usr/bin/python3';
const hasOpenEnv = (() => {
  try {
    execFileSync(PYTHON, ['-c', 'import openenv.core.generic_client'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();
// The client is a module of the trainer-side package (python/src/searcher_rl_trainers).
const packageRoot = fileURLToPath(new URL('../../python/src', import.meta.url));
const client = ['-m', 'searcher_rl_trainers.openenv_episodes'];
const env = { ...process.env, PYTHONPATH: packageRoot };

function run(args: string[]): Promise<string> {
  return new Promise((resolve, reject) =>
    execFile(PYTHON, [...client, ...args], { timeout: 60_000, env }, (error, out, err) =>
      error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out),
    ),
  );
}

describe.runIf(hasOpenEnv)("OpenEnv's own GenericEnvClient (openenv-core)", () => {
  it('connects to a server with --token through credentials in base_url, runs whole episodes, gets a JSON-RPC error for mcp', async () => {
    const server = createEnvServer(mockServedEnvironment(), { token: 'tok-3f9a', maxSessions: 8 });
    const port = await server.listen(0);
    try {
      const stdout = await run([
        `ws://searcher:tok-3f9a@127.0.0.1:${port}`,
        '--tasks',
        'acme-revenue,acme-report',
        '--episodes',
        '4',
      ]);
      const lines = stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      expect(lines.at(-1)).toEqual({ episodes: 5, done: 5 });
      const episodes = lines.slice(0, 5);
      for (const line of episodes) expect(line).toMatchObject({ done: true, reward_status: 'ok' });
      expect(episodes.find((l) => l.task === 'acme-revenue' && l.steps === 2)?.reward).toBe(1);
      expect(lines[5]).toEqual({
        mcp: {
          type: 'mcp',
          data: {
            jsonrpc: '2.0',
            id: 1,
            error: { code: -32601, message: expect.stringContaining('no MCP tools') },
          },
        },
        state_after: 0,
      });
      // The same client without the token, or with a wrong one, is refused.
      await expect(
        run([`ws://127.0.0.1:${port}`, '--tasks', 'acme-revenue', '--episodes', '1']),
      ).rejects.toThrow(/401/);
      await expect(
        run([`ws://searcher:wrong@127.0.0.1:${port}`, '--tasks', 'acme-revenue', '--episodes', '1']),
      ).rejects.toThrow(/401/);
    } finally {
      await server.close();
    }
    // The full openenv-core (gradio, pandas, openai) takes 10-25 s to import on a loaded 2-core machine, once per client process.
  }, 180_000);
});
