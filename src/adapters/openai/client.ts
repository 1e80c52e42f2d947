import OpenAI from 'openai';
import type { PortName } from '../../core/errors';
import type { CallOptions } from '../../ports/common';
import { guardedFetch, toProviderError } from '../../provider-utils/index';
import { lazyClient } from '../../provider-utils/lazy-client';

/** What every OpenAI-SDK adapter (generator, judge, embedder, the OpenAI-compatible policy) gives its client. */
export interface OpenAIClientSettings {
  /** The port and provider its failures are reported as. */
  caller: { port: PortName; provider: string };
  /** The key, resolved at the first call (`loadApiKey`, or the compatible server's own rule). */
  resolveKey: () => string;
  baseURL?: string | undefined;
  organization?: string | undefined;
  /** The largest response body read, in bytes. */
  maxResponseBytes: number;
}

/** An OpenAI client made at the first call, and its one way to call it. */
export interface OpenAIClient {
  /** The client (made now if it was not yet: a missing key throws here). */
  get(): OpenAI;
  /** One SDK call (one attempt), its failures typed for the core's reliability layer with the key redacted. */
  call<T>(
    run: (openai: OpenAI, signal: AbortSignal | undefined) => Promise<T>,
    options?: CallOptions,
  ): Promise<T>;
}

/**
 * The one OpenAI client factory of the OpenAI family: one attempt per call (retries and timeouts
 * are the core's, withReliability), redirects kept within the configured origin and answers
 * within `maxResponseBytes` (guardedFetch), and the one mapping of the SDK's errors
 * (toProviderError, with its abort and connection error types).
 */
export function createOpenAIClient(settings: OpenAIClientSettings): OpenAIClient {
  const client = lazyClient(
    settings.resolveKey,
    (apiKey) =>
      new OpenAI({
        apiKey,
        baseURL: settings.baseURL,
        organization: settings.organization,
        maxRetries: 0,
        timeout: 10 * 60_000,
        fetch: guardedFetch(settings.caller, { maxResponseBytes: settings.maxResponseBytes }),
      }),
  );
  return {
    get: () => client.get(),
    async call(run, options) {
      const openai = client.get();
      try {
        return await run(openai, options?.signal);
      } catch (error) {
        throw toProviderError({
          ...settings.caller,
          error,
          signal: options?.signal,
          secrets: [client.key],
          aborted: error instanceof OpenAI.APIUserAbortError,
          connectionFailure: error instanceof OpenAI.APIConnectionError,
        });
      }
    },
  };
}
