import { describe, expect, it } from 'vitest';
import { AbortedError, PortOutputError, ProviderCallError } from '../errors';
import type { Judge, JudgeVerdict } from '../../ports/judge';
import { parseRetryAfter } from '../../provider-utils/retry-after';
import { redactSecrets } from '../../provider-utils/redact';
import { createVirtualClock } from '../../testing/virtual-clock';
import { createReliableCaller } from './reliable-call';
import { withReliability } from './with-reliability';

type Behaviour = (call: number, signal?: AbortSignal) => Promise<JudgeVerdict>;

function fakeJudge(behaviour: Behaviour) {
  const calls: number[] = [];
  let inFlight = 0;
  let peak = 0;
  const judge: Judge & { calls: number[]; peak: () => number } = {
    specificationVersion: 'v1',
    provider: 'fake',
    calls,
    peak: () => peak,
    async doScore(_q, _a, _r, options) {
      calls.push(calls.length);
      inFlight++;
      peak = Math.max(peak, inFlight);
      try {
        return await behaviour(calls.length, options?.signal);
      } finally {
        inFlight--;
      }
    },
  };
  return judge;
}

const status = (code: number, retryAfterMs?: number) =>
  new ProviderCallError({
    port: 'judge',
    provider: 'fake',
    message: `status ${code}`,
    status: code,
    retryAfterMs,
  });
const never = (_call: number, signal?: AbortSignal) =>
  new Promise<JudgeVerdict>((_r, reject) => signal?.addEventListener('abort', () => reject(signal.reason)));

describe('withReliability', () => {
  it('waits for Retry-After on a 429, then succeeds', async () => {
    const clock = createVirtualClock();
    const judge = fakeJudge(async (call) => {
      if (call === 1) throw status(429, 7_000);
      return { score: 1 };
    });
    const reliable = withReliability(judge, 'judge', {}, { clock, random: () => 0 });
    const verdict = await clock.run(reliable.doScore('q', 'a', 'r'));
    expect(verdict.score).toBe(1);
    expect(judge.calls).toHaveLength(2);
    expect(clock.now()).toBe(7_000);
  });

  it('backs off exponentially with jitter on a 500, then succeeds', async () => {
    const clock = createVirtualClock();
    const judge = fakeJudge(async (call) => {
      if (call <= 2) throw status(500);
      return { score: 0.5 };
    });
    const delays: number[] = [];
    const reliable = withReliability(
      judge,
      'judge',
      { maxRetries: 3 },
      { clock, random: () => 1, onRetry: ({ delayMs }) => delays.push(delayMs) },
    );
    expect((await clock.run(reliable.doScore('q', 'a', 'r'))).score).toBe(0.5);
    // min(500 * 2^n, 8000) * (1 - 1 * 0.25)
    expect(delays).toEqual([375, 750]);
  });

  it('times out a server that never answers, retries, then fails with a typed error', async () => {
    const clock = createVirtualClock();
    const judge = fakeJudge(never);
    const reliable = withReliability(
      judge,
      'judge',
      { timeoutMs: 1_000, maxRetries: 2 },
      { clock, random: () => 0 },
    );
    const error = await clock.run(reliable.doScore('q', 'a', 'r')).catch((e: unknown) => e);
    expect(ProviderCallError.isInstance(error)).toBe(true);
    expect((error as ProviderCallError).message).toMatch(/timed out after 1000 ms \(after 3 attempts\)/);
    expect(judge.calls).toHaveLength(3);
    // Three 1 s attempts and two backoffs of 500 and 1000 ms.
    expect(clock.now()).toBe(4_500);
    expect(clock.pendingTimers).toBe(0);
  });

  it('does not retry a 400 or an unusable answer', async () => {
    const clock = createVirtualClock();
    const bad = fakeJudge(async () => {
      throw status(400);
    });
    await expect(
      clock.run(withReliability(bad, 'judge', {}, { clock }).doScore('q', 'a', 'r')),
    ).rejects.toMatchObject({ status: 400, isRetryable: false });
    expect(bad.calls).toHaveLength(1);
    const nonsense = fakeJudge(async () => {
      throw new PortOutputError({ port: 'judge', provider: 'fake', field: 'score', message: 'not JSON' });
    });
    await expect(
      clock.run(withReliability(nonsense, 'judge', {}, { clock }).doScore('q', 'a', 'r')),
    ).rejects.toThrowError(PortOutputError);
    expect(nonsense.calls).toHaveLength(1);
  });

  it('ignores a Retry-After beyond the limit and backs off instead', async () => {
    const clock = createVirtualClock();
    const judge = fakeJudge(async (call) => {
      if (call === 1) throw status(503, 3_600_000);
      return { score: 1 };
    });
    await clock.run(withReliability(judge, 'judge', {}, { clock, random: () => 0 }).doScore('q', 'a', 'r'));
    expect(clock.now()).toBe(500);
  });

  it('stops at once when the caller aborts, during an attempt or a backoff', async () => {
    const clock = createVirtualClock();
    const controller = new AbortController();
    const judge = fakeJudge(async () => {
      throw status(503, 30_000);
    });
    const pending = withReliability(judge, 'judge', {}, { clock }).doScore('q', 'a', 'r', {
      signal: controller.signal,
    });
    const caught = pending.catch((e: unknown) => e);
    await clock.advance(10);
    controller.abort();
    expect(AbortedError.isInstance(await caught)).toBe(true);
    expect(clock.now()).toBe(10);
    const stuck = withReliability(fakeJudge(never), 'judge', {}, { clock }).doScore('q', 'a', 'r', {
      signal: AbortSignal.abort(),
    });
    await expect(stuck).rejects.toThrowError(AbortedError);
  });

  it('caps concurrent calls', async () => {
    const clock = createVirtualClock();
    const judge = fakeJudge(async () => {
      await clock.sleep(100);
      return { score: 1 };
    });
    const reliable = withReliability(judge, 'judge', { maxConcurrent: 2 }, { clock });
    await clock.run(Promise.all(Array.from({ length: 6 }, () => reliable.doScore('q', 'a', 'r'))));
    expect(judge.peak()).toBe(2);
    expect(clock.now()).toBe(300);
  });

  it('wraps do* methods of a class-based adapter (kept on the prototype) too', async () => {
    const clock = createVirtualClock();
    class SlowJudge implements Judge {
      readonly specificationVersion = 'v1' as const;
      readonly provider = 'class';
      inFlight = 0;
      peak = 0;
      async doScore(
        _q: string,
        _a: string,
        _r: string,
        _options?: { signal?: AbortSignal },
      ): Promise<JudgeVerdict> {
        this.inFlight++;
        this.peak = Math.max(this.peak, this.inFlight);
        await clock.sleep(10);
        this.inFlight--;
        return { score: 1 };
      }
    }
    const judge = new SlowJudge();
    const reliable = withReliability(judge, 'judge', { maxConcurrent: 2 }, { clock });
    await clock.run(Promise.all(Array.from({ length: 7 }, () => reliable.doScore('q', 'a', 'r'))));
    expect(judge.peak).toBe(2);
    expect(reliable.provider).toBe('class');
  });

  it('keeps to requests per minute and tokens per minute', async () => {
    const clock = createVirtualClock();
    const judge = fakeJudge(async () => ({ score: 1 }));
    const starts: number[] = [];
    const timed = fakeJudge(async () => {
      starts.push(clock.now());
      return { score: 1 };
    });
    await clock.run(
      Promise.all(
        Array.from({ length: 5 }, () =>
          withReliability(timed, 'judge', { requestsPerMinute: 2 }, { clock }).doScore('q', 'a', 'r'),
        ),
      ),
    );
    void judge;
    // Each wrapper has its own limiter: five separate wrappers are not limited together.
    expect(starts).toEqual([0, 0, 0, 0, 0]);
    starts.length = 0;
    const shared = withReliability(timed, 'judge', { requestsPerMinute: 2 }, { clock });
    await clock.run(Promise.all(Array.from({ length: 5 }, () => shared.doScore('q', 'a', 'r'))));
    expect(starts.map((t) => t - starts[0]!)).toEqual([0, 0, 60_000, 60_000, 120_000]);
    starts.length = 0;
    const byTokens = withReliability(
      timed,
      'judge',
      { tokensPerMinute: 100 },
      { clock, estimateTokens: () => 60 },
    );
    const t0 = clock.now();
    await clock.run(Promise.all([byTokens.doScore('q', 'a', 'r'), byTokens.doScore('q', 'a', 'r')]));
    expect(starts.map((t) => t - t0)).toEqual([0, 60_000]);
  });

  it('wraps an unknown adapter exception as a retryable ProviderCallError naming port and provider', async () => {
    const clock = createVirtualClock();
    const judge = fakeJudge(async () => {
      throw new TypeError('fetch failed');
    });
    const error = await clock
      .run(
        withReliability(judge, 'judge', { maxRetries: 1 }, { clock, random: () => 0 }).doScore('q', 'a', 'r'),
      )
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ port: 'judge', provider: 'fake', isRetryable: true });
    expect((error as Error).message).toMatch(/fetch failed \(after 2 attempts\)/);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds, milliseconds and HTTP dates', () => {
    expect(parseRetryAfter(new Headers({ 'retry-after': '2' }))).toBe(2000);
    expect(parseRetryAfter(new Headers({ 'retry-after-ms': '150', 'retry-after': '9' }))).toBe(150);
    expect(parseRetryAfter({ 'retry-after': 'Thu, 01 Jan 1970 00:00:05 GMT' }, 1000)).toBe(4000);
    expect(parseRetryAfter({})).toBeUndefined();
  });
});

describe('redactSecrets', () => {
  it('removes every occurrence of a key', () => {
    expect(redactSecrets('bad key sk-abc123 (sk-abc123)', ['sk-abc123', undefined])).toBe(
      'bad key [redacted] ([redacted])',
    );
  });
});

describe('withReliability: review fixes', () => {
  it("hands an adapter's own call the attempt's signal, leaving its request untouched, and cancels it on timeout", async () => {
    const clock = createVirtualClock();
    const seen: unknown[][] = [];
    const client = {
      provider: 'custom',
      async doComplete(...args: unknown[]) {
        seen.push(args);
        const signal = (args[1] as { signal?: AbortSignal } | undefined)?.signal;
        await clock.sleep(1_000, signal);
        return 'done';
      },
    };
    const caller = createReliableCaller(
      'policy',
      client.provider,
      { timeoutMs: 100, maxRetries: 0 },
      { clock },
    );
    const request = { prompt: [1, 2] };
    const error = await clock
      .run(caller.call('complete', (signal) => client.doComplete(request, { signal }), { args: [request] }))
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ isRetryable: true });
    // The request is untouched and the signal came as a second argument, so the call was cancelled.
    expect(seen[0]![0]).toEqual({ prompt: [1, 2] });
    expect((seen[0]![1] as { signal: AbortSignal }).signal.aborted).toBe(true);
    expect(clock.pendingTimers).toBe(0);
  });

  it('counts a request against the rate limit when it is sent, not while it waits for a slot', async () => {
    const clock = createVirtualClock();
    const sent: number[] = [];
    let first = true;
    const judge = fakeJudge(async () => {
      sent.push(clock.now());
      if (first) {
        first = false;
        await clock.sleep(59_000);
      }
      return { score: 1 };
    });
    const reliable = withReliability(
      judge,
      'judge',
      { requestsPerMinute: 2, maxConcurrent: 1, timeoutMs: null },
      { clock },
    );
    await clock.run(Promise.all(Array.from({ length: 4 }, () => reliable.doScore('q', 'a', 'r'))));
    for (const t of sent) expect(sent.filter((u) => u > t - 60_000 && u <= t).length).toBeLessThanOrEqual(2);
    expect(sent).toEqual([0, 59_000, 60_000, 119_000]);
  });

  it('lets an aborted call leave the rate-limit queue at once', async () => {
    const clock = createVirtualClock();
    const reliable = withReliability(
      fakeJudge(async () => ({ score: 1 })),
      'judge',
      { requestsPerMinute: 1 },
      { clock },
    );
    await clock.run(reliable.doScore('q', 'a', 'r'));
    const controller = new AbortController();
    const queued = reliable.doScore('q', 'a', 'r', { signal: controller.signal }).catch((e: unknown) => e);
    await clock.advance(10);
    controller.abort();
    await clock.advance(0);
    expect(AbortedError.isInstance(await queued)).toBe(true);
    expect(clock.now()).toBe(10);
  });

  it('counts token ids, images and the output budget toward tokens per minute', async () => {
    const clock = createVirtualClock();
    const sent: number[] = [];
    const client = {
      provider: 'p',
      async doComplete(_request: unknown, _options?: { signal?: AbortSignal }) {
        sent.push(clock.now());
        return 'ok';
      },
    };
    const caller = createReliableCaller('policy', client.provider, { tokensPerMinute: 1_000 }, { clock });
    const complete = (request: unknown) =>
      caller.call('complete', (signal) => client.doComplete(request, { signal }), { args: [request] });
    await clock.run(
      Promise.all([
        complete({ prompt: new Array(400).fill(7), max_tokens: 200 }),
        complete({ prompt: new Array(400).fill(7), max_tokens: 200 }),
      ]),
    );
    expect(sent).toEqual([0, 60_000]);
  });

  it('rejects a fractional requests-per-minute below 1', () => {
    expect(() =>
      withReliability(
        fakeJudge(async () => ({ score: 1 })),
        'judge',
        { requestsPerMinute: 0.5 },
      ),
    ).toThrow(/requestsPerMinute/);
  });

  it('does not retry an untyped exception that is not a connection failure', async () => {
    const clock = createVirtualClock();
    const judge = fakeJudge(async () => {
      throw new TypeError("Cannot read properties of undefined (reading 'score')");
    });
    await expect(
      clock.run(withReliability(judge, 'judge', {}, { clock }).doScore('q', 'a', 'r')),
    ).rejects.toMatchObject({ isRetryable: false });
    expect(judge.calls).toHaveLength(1);
  });

  it('stops a call aborted while its attempt is running', async () => {
    const clock = createVirtualClock();
    const controller = new AbortController();
    const judge = fakeJudge(never);
    const pending = withReliability(judge, 'judge', {}, { clock })
      .doScore('q', 'a', 'r', { signal: controller.signal })
      .catch((e: unknown) => e);
    await clock.advance(100);
    expect(judge.calls).toHaveLength(1);
    controller.abort();
    await clock.advance(0);
    expect(AbortedError.isInstance(await pending)).toBe(true);
    expect(clock.now()).toBe(100);
  });
});
