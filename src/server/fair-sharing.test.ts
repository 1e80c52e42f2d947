import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { mockServedEnvironment } from '../../test/support/fixture-environment';
import { createEnvServer, type EnvServer, type EnvServerOptions } from './env-server';
import { createSlotCounter, defaultSessionsPerClient } from './slots';

let server: EnvServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function start(options: EnvServerOptions) {
  server = createEnvServer(mockServedEnvironment(), options);
  return `ws://127.0.0.1:${await server.listen(0)}/ws`;
}

interface Client {
  request(frame: unknown): Promise<{ type: string; data: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** A session from a given local address (127.0.0.x are all this machine) or with given headers. */
function connect(url: string, options: { localAddress?: string; headers?: Record<string, string> } = {}) {
  return new Promise<Client>((resolve, reject) => {
    const ws = new WebSocket(url, { ...options });
    const inbox: string[] = [];
    const waiting: Array<(raw: string) => void> = [];
    const closed = new Promise<void>((r) => ws.once('close', () => r()));
    ws.on('message', (raw) => {
      const waiter = waiting.shift();
      if (waiter) waiter(raw.toString());
      else inbox.push(raw.toString());
    });
    ws.once('error', reject);
    const next = () =>
      new Promise<string>((r) => (inbox.length > 0 ? r(inbox.shift()!) : waiting.push(r))).then((t) =>
        JSON.parse(t),
      );
    ws.once('open', () =>
      resolve({
        request: (frame) => {
          ws.send(JSON.stringify(frame));
          return next();
        },
        close: () => {
          ws.close();
          return closed;
        },
      }),
    );
  });
}

const reset = (client: Client) => client.request({ type: 'reset', data: { task: 'acme-revenue' } });
const basic = (user: string, token: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}`,
});

describe('serve-env: fair sharing between clients (issue 41, docs/scale-out.md#fair-sharing)', () => {
  it('the default per-client cap is half of --max-sessions, at least 1', () => {
    expect(defaultSessionsPerClient(64)).toBe(32);
    expect(defaultSessionsPerClient(3)).toBe(1);
    expect(defaultSessionsPerClient(1)).toBe(1);
  });

  it('one address over its share gets CAPACITY_REACHED while another address is still served', async () => {
    const url = await start({ maxSessions: 4 });
    const greedy = [
      await connect(url, { localAddress: '127.0.0.1' }),
      await connect(url, { localAddress: '127.0.0.1' }),
    ];
    for (const session of greedy) expect(await reset(session)).toMatchObject({ type: 'observation' });
    const third = await connect(url, { localAddress: '127.0.0.1' });
    expect(await third.request({ type: 'state' })).toMatchObject({
      type: 'error',
      data: {
        code: 'CAPACITY_REACHED',
        client_sessions: 2,
        max_sessions_per_client: 2,
        active_sessions: 2,
        max_sessions: 4,
      },
    });
    // The other client gets the slots the first could not take.
    const other = [
      await connect(url, { localAddress: '127.0.0.2' }),
      await connect(url, { localAddress: '127.0.0.2' }),
    ];
    for (const session of other) expect(await reset(session)).toMatchObject({ type: 'observation' });
    // A session given back is the first client's to take again.
    await greedy[0]!.close();
    await new Promise((r) => setTimeout(r, 20));
    const again = await connect(url, { localAddress: '127.0.0.1' });
    expect(await reset(again)).toMatchObject({ type: 'observation' });
    for (const session of [again, greedy[1]!, ...other]) await session.close();
  });

  it('with --token, clients are told apart by their Basic user name, not by the shared token', async () => {
    const url = await start({ maxSessions: 2, token: 'tok-41' });
    const a = await connect(url, { headers: basic('trainer-a', 'tok-41') });
    expect(await reset(a)).toMatchObject({ type: 'observation' });
    const aAgain = await connect(url, { headers: basic('trainer-a', 'tok-41') });
    expect(await aAgain.request({ type: 'state' })).toMatchObject({
      type: 'error',
      data: { code: 'CAPACITY_REACHED', client_sessions: 1, max_sessions_per_client: 1 },
    });
    const b = await connect(url, { headers: basic('trainer-b', 'tok-41') });
    expect(await reset(b)).toMatchObject({ type: 'observation' });
    await a.close();
    await b.close();
  });

  it('property: any acquire/release sequence keeps both caps, and refuses a client under its share only when the server is full', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 3 })), { maxLength: 80 }),
        (max, share, steps) => {
          const perClient = Math.min(share, max);
          const counter = createSlotCounter(max, perClient);
          const held = new Map<number, number>();
          for (const [acquire, c] of steps) {
            const client = `c${c}`;
            if (acquire) {
              const grant = counter.acquire(client);
              const had = held.get(c) ?? 0;
              const total = [...held.values()].reduce((x, y) => x + y, 0);
              expect(grant.ok).toBe(total < max && had < perClient);
              if (!grant.ok) expect(grant.refusedBy).toBe(total >= max ? 'server' : 'client');
              if (grant.ok) held.set(c, had + 1);
            } else if ((held.get(c) ?? 0) > 0) {
              counter.release(client);
              held.set(c, held.get(c)! - 1);
            } else counter.release(client);
            expect(counter.active).toBe([...held.values()].reduce((x, y) => x + y, 0));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
