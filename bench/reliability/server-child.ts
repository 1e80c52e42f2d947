// The environment server of bench/reliability/server.ts, in its own process so that its memory is
// measured alone: the mock served environment (two pages, two tasks) on 127.0.0.1. It reports its
// port, then answers 'figures' with its peak resident memory (the kernel's VmHWM), the longest its
// event loop was held, and its session counts; 'reset-peak' answers them, then starts both again.
import { readFileSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createEnvServer } from '../../src/server/env-server';
import { mockServedEnvironment } from '../../test/support/fixture-environment';

const served = mockServedEnvironment();
served.episode = { ...served.episode, maxTurnTokens: Number(process.env.SERVER_CHILD_TURN_TOKENS ?? 256) };
const server = createEnvServer(served, { maxSessions: 64, maxSessionsPerClient: 64, idleTimeoutMs: 60_000 });
const port = await server.listen(0);

// How long the server's event loop was held at most: what every other session waited.
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

const statusKb = (field: string) => {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${field}:`));
  return line ? Number(line.split(/\s+/)[1]) : Math.round(process.memoryUsage.rss() / 1024);
};

process.on('message', (message: string) => {
  // The figures since the last reset, then (if asked) the peak starts again from the current size.
  process.send!({
    peakRssMb: Math.round(statusKb('VmHWM') / 1024),
    rssMb: Math.round(statusKb('VmRSS') / 1024),
    activeSessions: server.activeSessions,
    pausedSessions: server.pausedSessions,
    loopDelayMaxMs: Math.round(loopDelay.max / 1e6),
  });
  if (message === 'reset-peak') {
    loopDelay.reset();
    try {
      // Linux: 5 resets the peak resident set size (VmHWM) to the current one.
      writeFileSync('/proc/self/clear_refs', '5');
    } catch {}
  }
});
process.send!({ port });
