import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { openSession } from '../../test/support/ws-test-client';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cleanup: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const step of cleanup.reverse()) await step();
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

/** The primary's node children (tsx's esbuild service is a child too). */
const workerPids = (primary: ChildProcess) =>
  execFileSync('ps', ['-o', 'pid=,comm=', '--ppid', String(primary.pid)], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([pid, command]) => Number(pid) > 0 && command === 'node')
    .map(([pid]) => Number(pid))
    .sort();

describe('serve-env --workers', () => {
  it('keeps answering when a worker dies: the primary starts another; bad frames kill none', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'serve-env-cluster-'));
    cleanup.push(() => rm(dir, { recursive: true, force: true }));
    const tasks = join(dir, 'tasks.jsonl');
    await writeFile(
      tasks,
      `${JSON.stringify({ uid: 't1', question: 'What is Acme?', reference: 'a firm' })}\n`,
    );
    const port = await freePort();
    const primary = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/main.ts',
        'serve-env',
        '--tasks',
        tasks,
        '--workers',
        '2',
        '--port',
        String(port),
      ],
      { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    primary.stderr!.on('data', (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => primary.once('exit', (code) => resolve(code)));
    cleanup.push(() => {
      if (primary.exitCode === null) primary.kill('SIGKILL');
    });
    await vi.waitFor(() => expect(stderr).toMatch(/2 workers/), { timeout: 60_000, interval: 100 });
    const url = `ws://127.0.0.1:${port}/ws`;
    const answers = async () => {
      const session = await openSession(url);
      const reply = await session.request({ type: 'reset', data: { task: 't1' } });
      session.close();
      return reply.type;
    };
    expect(await answers()).toBe('observation');
    const first = workerPids(primary);
    expect(first).toHaveLength(2);

    for (let i = 0; i < 6; i++) {
      const bad = new WebSocket(url);
      bad.on('error', () => undefined);
      await new Promise((resolve) => bad.once('open', resolve));
      bad.send(Buffer.from([0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa]), { binary: false });
      await new Promise((resolve) => bad.once('close', resolve));
    }
    expect(workerPids(primary)).toEqual(first);

    for (const pid of first) {
      process.kill(pid, 'SIGKILL');
      await vi.waitFor(
        () => {
          const now = workerPids(primary);
          expect(now).toHaveLength(2);
          expect(now).not.toContain(pid);
        },
        { timeout: 60_000, interval: 200 },
      );
      await vi.waitFor(async () => expect(await answers()).toBe('observation'), {
        timeout: 60_000,
        interval: 200,
      });
    }
    expect(stderr).toMatch(/worker \d+ exited.*starting another/);
    primary.kill('SIGTERM');
    expect(await exited).toBe(0);
  }, 180_000);
});
