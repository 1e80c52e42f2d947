import { expect, it } from 'vitest';
import type { CallPolicy } from '../../src/core/calls/call-policy';
import type { ReliabilityDeps } from '../../src/core/calls/reliable-call';
import { withReliability } from '../../src/core/calls/with-reliability';
import { AbortedError, ProviderCallError } from '../../src/core/errors';
import type { PortName } from '../../src/core/errors';
import type { RecordedServer, Reply } from './recorded-server';

export interface FaultSuiteOptions<P extends { provider: string }> {
  server: () => RecordedServer;
  port: PortName;
  /** A fresh adapter pointed at the server. */
  adapter: () => P;
  /** One call to the (wrapped) adapter. */
  call: (adapter: P, signal?: AbortSignal) => Promise<unknown>;
  /** How the adapter is put under the reliability rule (default: `withReliability(adapter, port, ...)`). */
  reliable?: (adapter: P, policy: Partial<CallPolicy>, deps: ReliabilityDeps) => P;
  /** The recorded success reply, and the adapter's error replies for 429 and 500. */
  success: Reply;
  rateLimited: Reply;
  serverError: Reply;
  /** What a successful call returns (checked after each recovery). */
  check: (result: unknown) => void;
}

/**
 * The fault tests every remote adapter must pass, through the core's reliability layer:
 * 429 with Retry-After (waited, then success), 500 then success, a server that never answers
 * (timeout, retry, typed error), a malformed body, and an aborted call.
 */
export function faultSuite<P extends { provider: string }>(options: FaultSuiteOptions<P>): void {
  const reliable =
    options.reliable ??
    ((adapter: P, policy: Partial<CallPolicy>, deps: ReliabilityDeps) =>
      (withReliability as (p: P, n: PortName, c: Partial<CallPolicy>, d: ReliabilityDeps) => P)(
        adapter,
        options.port,
        policy,
        deps,
      ));
  const wrapped = (policy: Partial<CallPolicy> = {}) => {
    const delays: number[] = [];
    const adapter = reliable(
      options.adapter(),
      { maxRetries: 2, initialRetryDelayMs: 10, ...policy },
      { random: () => 0, onRetry: ({ delayMs }) => delays.push(delayMs) },
    );
    return { adapter, delays };
  };

  it('waits for Retry-After on a 429, then succeeds', async () => {
    const rateLimited = {
      ...options.rateLimited,
      headers: {
        ...('headers' in options.rateLimited ? options.rateLimited.headers : {}),
        'retry-after': '0.12',
      },
    } as Reply;
    options.server().reply(rateLimited, options.success);
    const { adapter, delays } = wrapped();
    options.check(await options.call(adapter));
    expect(delays).toEqual([120]);
    expect(options.server().requests).toHaveLength(2);
  });

  it('retries a 500, then succeeds', async () => {
    options.server().reply(options.serverError, options.success);
    const { adapter, delays } = wrapped();
    options.check(await options.call(adapter));
    expect(delays).toEqual([10]);
  });

  it('gives up on a server that never answers: timeout, retry, then a typed error', async () => {
    options.server().reply({ hang: true });
    const { adapter } = wrapped({ timeoutMs: 150, maxRetries: 1 });
    const error = await options.call(adapter).catch((e: unknown) => e);
    expect(ProviderCallError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/timed out after 150 ms \(after 2 attempts\)/);
    expect(options.server().requests).toHaveLength(2);
    // The timed-out requests were really cancelled, not left running behind the error.
    expect(await options.server().waitForHangingClosed()).toBe(0);
  });

  it('types a malformed body as a provider error, not retried (the call may have been done and billed)', async () => {
    options.server().reply({ text: '{"truncated": [', headers: { 'content-type': 'application/json' } });
    const { adapter } = wrapped({ maxRetries: 1 });
    const error = await options.call(adapter).catch((e: unknown) => e);
    expect(error).toMatchObject({ port: options.port, isRetryable: false });
    expect((error as Error).message).toMatch(/malformed response body/);
    expect(options.server().requests).toHaveLength(1);
  });

  it('stops an aborted call', async () => {
    options.server().reply({ hang: true });
    const { adapter } = wrapped();
    const controller = new AbortController();
    const pending = options.call(adapter, controller.signal);
    setTimeout(() => controller.abort(), 20);
    await expect(pending).rejects.toThrowError(AbortedError);
    expect(await options.server().waitForHangingClosed()).toBe(0);
  });
}
