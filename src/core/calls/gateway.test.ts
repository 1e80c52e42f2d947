import { describe, expect, it } from 'vitest';
import { createMockSearchEngine } from '../../adapters/mock/index';
import { createScriptedPolicy } from '../../adapters/scripted-policy/index';
import type { Judge } from '../../ports/judge';
import type { PolicyBackend, RolloutSession } from '../../ports/policy-backend';
import { createVirtualClock } from '../../testing/virtual-clock';
import { InvalidArgumentError, PortOutputError } from '../errors';
import { createPortGateway, singleAttemptPolicies } from './gateway';

describe('createPortGateway', () => {
  it('marks an untyped adapter exception retryable only when it is a connection failure', async () => {
    const failing = (error: Error) =>
      createMockSearchEngine({ pages: [{ basename: 'a.png', text: 'a' }], failWith: () => error });
    const search = (error: Error) =>
      createPortGateway({ searchEngine: failing(error) }, singleAttemptPolicies()).search('a', 1);
    await expect(search(new TypeError('fetch failed'))).rejects.toMatchObject({
      port: 'searchEngine',
      isRetryable: true,
    });
    await expect(
      search(new TypeError("Cannot read properties of undefined (reading 'hits')")),
    ).rejects.toMatchObject({ port: 'searchEngine', isRetryable: false });
  });

  it('names the missing port when an operation needs it', async () => {
    const gateway = createPortGateway({});
    await expect(gateway.score('q', 'a', 'r')).rejects.toThrowError(InvalidArgumentError);
    await expect(gateway.score('q', 'a', 'r')).rejects.toMatchObject({ argument: 'ports.judge' });
  });

  it('checks outputs: a judge score outside [0, 1] or a hit without a basename is a PortOutputError', async () => {
    const judge: Judge = {
      specificationVersion: 'v1',
      provider: 'odd',
      doScore: async () => ({ score: 1.5 }),
    };
    await expect(
      createPortGateway({ judge }, singleAttemptPolicies()).score('q', 'a', 'r'),
    ).rejects.toMatchObject({ port: 'judge', field: 'score' });
    const engine = {
      specificationVersion: 'v1' as const,
      provider: 'odd',
      doSearch: async () => [{ id: '1', basename: '', score: 1 }],
    };
    await expect(
      createPortGateway({ searchEngine: engine }, singleAttemptPolicies()).search('q', 1),
    ).rejects.toThrowError(PortOutputError);
  });

  it('holds one port to one concurrency cap across all its calls', async () => {
    const clock = createVirtualClock();
    let inFlight = 0;
    let peak = 0;
    const judge: Judge = {
      specificationVersion: 'v1',
      provider: 'slow',
      async doScore() {
        peak = Math.max(peak, ++inFlight);
        await clock.sleep(10);
        inFlight--;
        return { score: 1 };
      },
    };
    const gateway = createPortGateway({ judge }, { judge: { maxConcurrent: 2 } }, { clock });
    await clock.run(Promise.all(Array.from({ length: 6 }, () => gateway.score('q', 'a', 'r'))));
    expect(peak).toBe(2);
    expect(clock.now()).toBe(30);
  });

  it('fails only the rollout whose turn output is unusable', async () => {
    const policy = createScriptedPolicy({ script: ['<search>a</search>'] });
    const gateway = createPortGateway({ policy }, singleAttemptPolicies());
    const session = await gateway.beginSession([
      [1, 2],
      [3, 4],
    ]);
    const broken: RolloutSession = {
      ...session,
      generateTurn: async (ids, options) =>
        (await session.generateTurn(ids, options)).filter((o) => o.rolloutId === 0),
    };
    const results = await gateway.generateTurn(broken, [0, 1], {
      stopAfter: ['</search>'],
      maxTokens: 50,
      temperature: 1,
      topP: 1,
    });
    expect(results[0]!.output?.steps.length).toBeGreaterThan(0);
    expect(results[1]!.error).toMatchObject({ port: 'policy', field: 'generateTurn[1].(output)' });
    await session.end();
  });

  it('ends a session of the wrong size before failing', async () => {
    let ended = 0;
    const inner = createScriptedPolicy({ script: ['x'] });
    const policy: PolicyBackend = Object.assign(Object.create(inner) as PolicyBackend, {
      begin: async (ids: readonly (readonly number[])[]) => {
        const session = await inner.begin(ids);
        return { ...session, size: 1, end: async () => void ended++ };
      },
    });
    await expect(createPortGateway({ policy }).beginSession([[1], [2]])).rejects.toMatchObject({
      field: 'session.size',
    });
    expect(ended).toBe(1);
  });
});
