import { afterEach, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { mockServedEnvironment } from '../../test/support/fixture-environment';
import { openSession } from '../../test/support/ws-test-client';
import { createEnvServer, type EnvServer, type EnvServerOptions } from './env-server';
import type { ServedEnvironment } from './environment';
import { serverMessageSchema } from './protocol';
import { InvalidArgumentError } from '../core/errors';
import { redactSecretsIn } from '../core/secrets';

let server: EnvServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function start(options: EnvServerOptions = {}, served: ServedEnvironment = mockServedEnvironment()) {
  server = createEnvServer(served, options);
  const port = await server.listen(0);
  return { url: `ws://127.0.0.1:${port}/ws`, http: `http://127.0.0.1:${port}`, port };
}

/** A raw client: whatever frames it is told to send, the close code it got. */
function rawClient(url: string): Promise<{ ws: WebSocket; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.on('error', () => undefined);
    ws.once('open', () => resolve({ ws, closed }));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
}

/** A whole episode on a fresh session: the server still serves others. */
async function wholeEpisode(url: string) {
  const session = await openSession(url);
  await session.request({ type: 'reset', data: { task: 'acme-revenue' } });
  await session.request({
    type: 'step',
    data: { text: '<think>a</think>\n<search>acme revenue 2019</search>' },
  });
  const done = await session.request({
    type: 'step',
    data: { text: '<think>b</think>\n<search_complete>true</search_complete>' },
  });
  session.close();
  return done;
}

describe('serve-env under hostile clients', () => {
  it('ends only its own session for a text frame that is not UTF-8 (1007), and keeps serving', async () => {
    const { url } = await start();
    const bystander = await openSession(url);
    await bystander.request({ type: 'reset', data: { task: 'acme-revenue' } });
    for (let i = 0; i < 3; i++) {
      const bad = await rawClient(url);
      bad.ws.send(Buffer.from([0x7b, 0xff, 0xfe, 0xc3, 0x28, 0x7d]), { binary: false });
      expect(await bad.closed).toBe(1007);
    }
    expect(await bystander.request({ type: 'state' })).toMatchObject({ data: { task_id: 'acme-revenue' } });
    expect((await wholeEpisode(url)).data).toMatchObject({ done: true, reward: 1 });
    bystander.close();
  });

  it('ends only its own session for a message over maxMessageBytes (1009)', async () => {
    const { url } = await start({ maxMessageBytes: 4096 });
    const bad = await rawClient(url);
    bad.ws.send(JSON.stringify({ type: 'step', data: { text: 'x'.repeat(10_000) } }));
    expect(await bad.closed).toBe(1009);
    expect((await wholeEpisode(url)).data).toMatchObject({ done: true, reward: 1 });
  });

  it('refuses a step longer than an assistant turn can be (maxTurnTokens) with VALIDATION_ERROR; the session goes on', async () => {
    const served = mockServedEnvironment();
    served.episode = { ...served.episode, maxTurnTokens: 8 };
    const { url } = await start({}, served);
    const session = await openSession(url);
    await session.request({ type: 'reset', data: { task: 'acme-revenue' } });
    const refused = await session.request({ type: 'step', data: { text: 'x'.repeat(513) } });
    expect(serverMessageSchema.parse(refused)).toMatchObject({
      type: 'error',
      data: {
        code: 'VALIDATION_ERROR',
        message: expect.stringMatching(/512 characters.*maxTurnTokens/s),
        errors: [{ loc: ['data', 'text'], type: 'too_big' }],
      },
    });
    // The default message cap follows: 6 bytes a character (JSON's \uXXXX) and 64 KiB for the rest.
    const accepted = await session.request({
      type: 'step',
      data: { text: `<think>${'\u00e9'.repeat(400)}</think>\n<search>acme revenue 2019</search>` },
    });
    expect(accepted).toMatchObject({ type: 'observation', data: { done: false } });
    const bad = await rawClient(url);
    bad.ws.send(JSON.stringify({ type: 'state', pad: 'x'.repeat(6 * 512 + 65_536) }));
    expect(await bad.closed).toBe(1009);
    expect(await session.request({ type: 'state' })).toMatchObject({ data: { step_count: 1 } });
    session.close();
  });

  it('answers a binary frame and a fragmented message; a ping flood ends only its own session', async () => {
    const { url } = await start();
    const client = await rawClient(url);
    const replies: Array<{ type: string; data: Record<string, unknown> }> = [];
    client.ws.on('message', (raw) => replies.push(JSON.parse(raw.toString())));
    client.ws.send(Buffer.from('{"type":"state"}'), { binary: true });
    client.ws.send('{"type":"sta', { fin: false });
    client.ws.send('te"}', { fin: true });
    client.ws.send(JSON.stringify({ type: 'reset', data: { task: 'acme-report' } }));
    await vi.waitFor(() => expect(replies).toHaveLength(3), { timeout: 10_000 });
    expect(replies[0]).toMatchObject({ type: 'error', data: { code: 'INVALID_JSON' } });
    expect(String(replies[0]!.data.message)).toMatch(/binary/);
    expect(replies[1]).toMatchObject({ type: 'state' });
    expect(replies[2]).toMatchObject({ type: 'observation' });
    client.ws.close();
    // Pongs owed past ws's limit (60) end the connection that asked for them.
    const flooder = await rawClient(url);
    for (let i = 0; i < 2000; i++) flooder.ws.ping();
    expect(await flooder.closed).toBe(1006);
    expect((await wholeEpisode(url)).data).toMatchObject({ done: true, reward: 1 });
  });

  it('gives an mcp message a JSON-RPC error (as OpenEnv does for an environment without MCP); the session goes on', async () => {
    const { url } = await start();
    const session = await openSession(url);
    expect(
      await session.request({
        type: 'mcp',
        data: { jsonrpc: '2.0', method: 'tools/list', params: {}, id: 7 },
      }),
    ).toEqual({
      type: 'mcp',
      data: {
        jsonrpc: '2.0',
        id: 7,
        error: { code: -32601, message: expect.stringContaining('no MCP tools') },
      },
    });
    expect(await session.request({ type: 'mcp', data: 'nonsense' })).toMatchObject({
      type: 'mcp',
      data: { jsonrpc: '2.0', id: null, error: { code: -32600 } },
    });
    expect(await session.request({ type: 'reset', data: { task: 'acme-report' } })).toMatchObject({
      type: 'observation',
    });
    session.close();
  });

  it('stops reading from a client that does not read its replies, and loses none of them', async () => {
    const served = mockServedEnvironment();
    let resets = 0;
    const tasks = served.tasks;
    // Every reset without a task reads the task list once: the count of resets the server handled.
    Object.defineProperty(served, 'tasks', {
      get: () => {
        resets++;
        return tasks;
      },
    });
    const { url } = await start({ maxBufferedBytes: 16 * 1024 }, served);
    const client = await rawClient(url);
    const frames = 50_000;
    let received = 0;
    let inOrder = true;
    client.ws.on('message', (raw) => {
      const reply = JSON.parse(raw.toString());
      if (reply.type !== 'observation' || reply.data.observation.metadata.episode_id !== `e${received}`)
        inOrder = false;
      received++;
    });
    client.ws.pause();
    for (let i = 0; i < frames; i++)
      client.ws.send(JSON.stringify({ type: 'reset', data: { seed: i, episode_id: `e${i}` } }));
    await vi.waitFor(() => expect(server!.pausedSessions).toBe(1), { timeout: 20_000 });
    const handledWhenPaused = resets;
    expect(handledWhenPaused).toBeLessThan(frames / 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(resets).toBe(handledWhenPaused);
    client.ws.resume();
    await vi.waitFor(() => expect(received).toBe(frames), { timeout: 60_000, interval: 100 });
    expect(inOrder).toBe(true);
    expect(server!.pausedSessions).toBe(0);
    client.ws.close();
  }, 90_000);

  it('takes the token from HTTP Basic credentials (ws://user:TOKEN@host, as OpenEnv clients send them)', async () => {
    const { port, http } = await start({ token: 's3cret-token' });
    const session = await openSession(`ws://searcher:s3cret-token@127.0.0.1:${port}/ws`);
    expect(await session.request({ type: 'reset', data: {} })).toMatchObject({ type: 'observation' });
    session.close();
    await expect(openSession(`ws://searcher:wrong@127.0.0.1:${port}/ws`)).rejects.toThrow(/401/);
    await expect(openSession(`ws://s3cret-token@127.0.0.1:${port}/ws`)).rejects.toThrow(/401/);
    const basic = `Basic ${Buffer.from('anyone:s3cret-token').toString('base64')}`;
    expect((await fetch(`${http}/tasks`, { headers: { authorization: basic } })).status).toBe(200);
    const wrong = `Basic ${Buffer.from('s3cret-token:x').toString('base64')}`;
    expect((await fetch(`${http}/tasks`, { headers: { authorization: wrong } })).status).toBe(401);
  });

  it('keeps its token out of errors and logs: the token is a registered secret', async () => {
    const token = 'serve-token-5f3a9c1e';
    await start({ token });
    const error = new InvalidArgumentError({
      argument: 'url',
      message: `cannot reach ws://u:${token}@host/ws`,
    });
    expect(error.message).not.toContain(token);
    expect(redactSecretsIn(`client sent ${token}`)).not.toContain(token);
  });
});
