import { afterEach, describe, expect, it } from 'vitest';
import { createEnvServer, type EnvServer } from './env-server';
import { mockServedEnvironment } from '../../test/support/fixture-environment';
import { clientMessageSchema, serverMessageSchema } from './protocol';
import { openSession } from '../../test/support/ws-test-client';

let server: EnvServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function start(options: Parameters<typeof createEnvServer>[1] = {}, served = mockServedEnvironment()) {
  server = createEnvServer(served, options);
  const port = await server.listen(0);
  return { url: `ws://127.0.0.1:${port}/ws`, http: `http://127.0.0.1:${port}` };
}

/** Sends a frame and returns the reply, both checked against the protocol's schemas. */
async function exchange(session: Awaited<ReturnType<typeof openSession>>, frame: unknown) {
  clientMessageSchema.parse(frame);
  const reply = await session.request(frame);
  serverMessageSchema.parse(reply);
  return reply;
}

describe('serve-env (OpenEnv protocol)', () => {
  it('runs a whole episode: the prompt at reset, observations with images, the reward at done', async () => {
    const { url } = await start();
    const session = await openSession(url);
    const reset = await exchange(session, {
      type: 'reset',
      data: { seed: 0, episode_id: 'e1', task: 'acme-revenue' },
    });
    expect(reset).toMatchObject({
      type: 'observation',
      data: {
        reward: null,
        done: false,
        observation: { metadata: { episode_id: 'e1', task_id: 'acme-revenue', step: 0 } },
      },
    });
    expect((reset.data.observation as { text: string }).text).toContain(
      'Question: What was Acme revenue in 2019?',
    );
    const search = await exchange(session, {
      type: 'step',
      data: { text: '<think>find it</think>\n<search>acme revenue 2019</search>' },
    });
    const shown = search.data.observation as { text: string; images: string[] };
    expect(shown.text).toContain('acme_2.png');
    expect(shown.images[0]).toMatch(/^data:[^;]+;base64,/);
    const done = await exchange(session, {
      type: 'step',
      data: { text: '<think>enough</think>\n<search_complete>true</search_complete>' },
    });
    expect(done.data).toMatchObject({
      done: true,
      observation: {
        metadata: { reward_status: 'ok', terminated: 'complete', final_answer: '4.5 billion dollars' },
      },
    });
    expect(done.data.reward).toBeGreaterThan(0.9);
    expect(await exchange(session, { type: 'state' })).toMatchObject({
      type: 'state',
      data: { episode_id: 'e1', step_count: 2, done: true, retrieved: ['acme_2.png'] },
    });
    expect(await exchange(session, { type: 'step', data: { text: '<search>again</search>' } })).toMatchObject(
      { type: 'error', data: { code: 'EXECUTION_ERROR' } },
    );
    // A new episode on the same session.
    expect(await exchange(session, { type: 'reset', data: { task: 'acme-report' } })).toMatchObject({
      data: { observation: { metadata: { task_id: 'acme-report', step: 0 } } },
    });
    session.send(JSON.stringify({ type: 'close' }));
    expect(await session.closed).toBe(1000);
  });

  it('answers each malformed frame with its OpenEnv error code', async () => {
    const { url } = await start();
    const session = await openSession(url);
    session.send('{not json');
    expect(await session.next()).toMatchObject({ type: 'error', data: { code: 'INVALID_JSON' } });
    expect(await session.request({ type: 'dance' })).toMatchObject({
      type: 'error',
      data: { code: 'UNKNOWN_TYPE' },
    });
    expect(await session.request({ type: 'step', data: { action: 'x' } })).toMatchObject({
      type: 'error',
      data: { code: 'VALIDATION_ERROR' },
    });
    expect(await session.request({ type: 'state', data: {} })).toMatchObject({
      type: 'error',
      data: { code: 'VALIDATION_ERROR' },
    });
    expect(await session.request({ type: 'reset', data: { seed: -1 } })).toMatchObject({
      type: 'error',
      data: { code: 'VALIDATION_ERROR' },
    });
    expect(await session.request({ type: 'step', data: { text: 'x' } })).toMatchObject({
      type: 'error',
      data: { code: 'EXECUTION_ERROR', message: expect.stringContaining('reset') },
    });
    expect(await session.request({ type: 'reset', data: { task: 'nope' } })).toMatchObject({
      type: 'error',
      data: { code: 'EXECUTION_ERROR' },
    });
    session.close();
  });

  it('keeps a failed reward missing, with its cause, instead of 0', async () => {
    const judge = {
      specificationVersion: 'v1' as const,
      provider: 'down',
      doScore: async () => Promise.reject(new Error('judge unavailable')),
    };
    const { url } = await start({}, mockServedEnvironment({ judge }));
    const session = await openSession(url);
    await session.request({ type: 'reset', data: { task: 'acme-revenue' } });
    await session.request({
      type: 'step',
      data: { text: '<think>a</think>\n<search>acme revenue 2019</search>' },
    });
    const done = await exchange(session, {
      type: 'step',
      data: { text: '<think>b</think>\n<search_complete>true</search_complete>' },
    });
    expect(done.data).toMatchObject({
      reward: null,
      done: true,
      observation: {
        metadata: {
          reward_status: 'missing',
          reward_cause: { stage: 'judge', message: expect.stringContaining('judge unavailable') },
        },
      },
    });
    session.close();
  });

  it('refuses sessions beyond the cap with CAPACITY_REACHED and frees the slot on close', async () => {
    const { url } = await start({ maxSessions: 2, maxSessionsPerClient: 2 });
    const [a, b] = [await openSession(url), await openSession(url)];
    const c = await openSession(url);
    expect(serverMessageSchema.parse(await c.next())).toMatchObject({
      type: 'error',
      data: { code: 'CAPACITY_REACHED', active_sessions: 2, max_sessions: 2 },
    });
    await c.closed;
    a.close();
    await a.closed;
    await new Promise((r) => setTimeout(r, 20));
    const d = await openSession(url);
    expect(await d.request({ type: 'reset', data: {} })).toMatchObject({ type: 'observation' });
    b.close();
    d.close();
  });

  it('keeps sessions apart', async () => {
    const { url } = await start();
    const [a, b] = [await openSession(url), await openSession(url)];
    await a.request({ type: 'reset', data: { episode_id: 'a', task: 'acme-revenue' } });
    await b.request({ type: 'reset', data: { episode_id: 'b', task: 'acme-report' } });
    await a.request({ type: 'step', data: { text: '<think>x</think>\n<search>acme revenue 2019</search>' } });
    expect(await b.request({ type: 'state' })).toMatchObject({
      data: { episode_id: 'b', step_count: 0, retrieved: [] },
    });
    expect(await a.request({ type: 'state' })).toMatchObject({
      data: { episode_id: 'a', step_count: 1, retrieved: ['acme_2.png'] },
    });
    a.close();
    b.close();
  });

  it('needs the bearer token for /ws and the HTTP side, but not /health', async () => {
    const { url, http } = await start({ token: 's3cret' });
    await expect(openSession(url)).rejects.toThrow(/401/);
    const session = await openSession(url, { authorization: 'Bearer s3cret' });
    expect(await session.request({ type: 'reset', data: {} })).toMatchObject({ type: 'observation' });
    session.close();
    expect((await fetch(`${http}/health`)).status).toBe(200);
    expect((await fetch(`${http}/tasks`)).status).toBe(401);
    const tasks = await (
      await fetch(`${http}/tasks`, { headers: { authorization: 'Bearer s3cret' } })
    ).json();
    expect(tasks).toMatchObject({ total: 2, tasks: [{ id: 'acme-revenue' }, { id: 'acme-report' }] });
  });

  it('serves /health, /metadata and /schema as OpenEnv does', async () => {
    const { http } = await start();
    expect(await (await fetch(`${http}/health`)).json()).toEqual({ status: 'healthy' });
    expect(await (await fetch(`${http}/metadata`)).json()).toMatchObject({
      name: 'searcher-rl',
      description: expect.any(String),
    });
    const schema = (await (await fetch(`${http}/schema`)).json()) as Record<
      string,
      { properties: Record<string, unknown> }
    >;
    expect(Object.keys(schema).sort()).toEqual(['action', 'observation', 'state']);
    expect(schema.action!.properties).toHaveProperty('text');
    expect(schema.state!.properties).toHaveProperty('step_count');
  });

  it('ends an idle session with SESSION_ERROR', async () => {
    const { url } = await start({ idleTimeoutMs: 50 });
    const session = await openSession(url);
    expect(await session.next()).toMatchObject({ type: 'error', data: { code: 'SESSION_ERROR' } });
    await session.closed;
    await new Promise((r) => setTimeout(r, 20));
    expect(server!.activeSessions).toBe(0);
  });

  it('drains: a running episode finishes, new connections are refused', async () => {
    const { url } = await start();
    const session = await openSession(url);
    await session.request({ type: 'reset', data: { task: 'acme-revenue' } });
    const draining = server!.drain(5_000);
    await expect(openSession(url)).rejects.toThrow();
    const done = await session.request({
      type: 'step',
      data: { text: '<think>b</think>\n<search_complete>true</search_complete>' },
    });
    expect(done.data.done).toBe(true);
    await draining;
    server = null;
  });
});
