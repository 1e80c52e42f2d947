import { describe, expect, it } from 'vitest';
import { AbortedError, ConfigValidationError, ProviderCallError } from '../core/errors';
import { loadApiKey } from './api-key';
import { retryDelayFromBody } from './retry-after';
import { parseSettings } from './settings';
import { toProviderError } from './vendor-error';
import { parseJudgeScore } from '../core/reward/judge-prompt';
import { redactAndCut } from './redact';
import { z } from 'zod';

describe('toProviderError', () => {
  const base = { port: 'judge' as const, provider: 'p' };

  it('keeps the status and Retry-After an SDK error carries, with the secret redacted', () => {
    const sdkError = Object.assign(new Error('429 Rate limit for key sk-secret-123'), {
      status: 429,
      headers: new Headers({ 'retry-after': '3' }),
    });
    const error = toProviderError({ ...base, error: sdkError, secrets: ['sk-secret-123'] });
    expect(error).toMatchObject({ status: 429, retryAfterMs: 3000, isRetryable: true });
    expect(error.message).not.toContain('sk-secret-123');
    expect(error.message).toContain('[redacted]');
  });

  it("falls back to the provider's own hint when the headers say nothing", () => {
    expect(
      toProviderError({ ...base, error: new Error('quota'), status: 429, retryAfterMs: 37_000 }),
    ).toMatchObject({ retryAfterMs: 37_000 });
  });

  it('types an abort, a malformed body and a connection failure', () => {
    const controller = new AbortController();
    controller.abort();
    expect(
      AbortedError.isInstance(toProviderError({ ...base, error: new Error('x'), signal: controller.signal })),
    ).toBe(true);
    expect(AbortedError.isInstance(toProviderError({ ...base, error: new Error('x'), aborted: true }))).toBe(
      true,
    );
    expect(
      toProviderError({ ...base, error: new SyntaxError('Unexpected end of JSON input') }),
    ).toMatchObject({ isRetryable: false, message: expect.stringMatching(/malformed response body/) });
    expect(toProviderError({ ...base, error: new TypeError('fetch failed') })).toMatchObject({
      isRetryable: true,
    });
    expect(toProviderError({ ...base, error: new Error('boom'), connectionFailure: true })).toMatchObject({
      isRetryable: true,
    });
    expect(
      toProviderError({ ...base, error: new TypeError("Cannot read properties of undefined (reading 'x')") }),
    ).toMatchObject({ isRetryable: false });
    expect(ProviderCallError.isInstance(toProviderError({ ...base, error: 'a string' }))).toBe(true);
  });
});

describe('loadApiKey', () => {
  it('takes the setting, else the first set variable, else says both ways to provide it', () => {
    const who = {
      vendor: 'Acme',
      factory: 'createAcmeJudge',
      environmentVariableNames: ['ACME_KEY', 'ACME_API_KEY'],
    };
    expect(loadApiKey({ ...who, apiKey: 'given', env: { ACME_KEY: 'env' } })).toBe('given');
    expect(loadApiKey({ ...who, apiKey: undefined, env: { ACME_KEY: '', ACME_API_KEY: 'second' } })).toBe(
      'second',
    );
    expect(() => loadApiKey({ ...who, apiKey: undefined, env: {} })).toThrow(
      /pass \{ apiKey \} to createAcmeJudge\(\.\.\.\) or set the ACME_KEY \(or ACME_API_KEY\) environment variable/,
    );
  });
});

describe('parseSettings', () => {
  const schema = z.object({ model: z.string(), retries: z.number().int().default(1) }).strict();
  it('names the factory and the field, an unknown key at the key itself', () => {
    expect(parseSettings('createX', schema, { model: 'm' })).toEqual({ model: 'm', retries: 1 });
    const error = (() => {
      try {
        parseSettings('createX', schema, { model: 3, retriez: 2 });
      } catch (e) {
        return e as ConfigValidationError;
      }
    })();
    expect(ConfigValidationError.isInstance(error)).toBe(true);
    expect(error!.issues.map((i) => i.field).sort()).toEqual(['createX.model', 'createX.retriez']);
    expect(() => parseSettings('createX', schema, 'nope')).toThrow(/createX\.\(settings\)/);
  });
});

describe('retryDelayFromBody', () => {
  it("reads Google's RetryInfo", () => {
    expect(
      retryDelayFromBody(
        '{"error":{"details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"37s"}]}}',
      ),
    ).toBe(37_000);
    expect(retryDelayFromBody('no hint')).toBeUndefined();
  });
});

describe('redactAndCut', () => {
  const key = 'sk-live-0123456789abcdef';

  it('redacts before it cuts, so a key straddling the cut leaves no part behind', () => {
    const text = `${'a'.repeat(10)}${key} rest`;
    for (let max = 1; max <= text.length; max++) {
      const out = redactAndCut(text, [key], max);
      for (let k = 4; k <= key.length; k++) expect(out).not.toContain(key.slice(0, k));
    }
  });

  it('never ends in a prefix (4 characters or more) of a secret, even one the text holds only in part', () => {
    expect(redactAndCut(`token: ${key.slice(0, 10)}`, [key], 100)).toBe('token: [redacted]');
    expect(redactAndCut(`token: ${key.slice(0, 3)}`, [key], 100)).toBe(`token: ${key.slice(0, 3)}`);
    expect(redactAndCut('short text', [key], 5)).toBe('short');
  });

  it('redacts the longer of two overlapping secrets whole', () => {
    expect(redactAndCut(`Bearer ${key}`, [key.slice(0, 8), key], 100)).toBe('Bearer [redacted]');
  });
});

describe('parseJudgeScore', () => {
  const parse = (raw: string) => parseJudgeScore(raw, 'judge', 'p');

  it('refuses any repeated key, however it is spelled', () => {
    expect(() => parse('{"score": 1, "\\u0073core": 0}')).toThrow(/exactly/);
    expect(() => parse('{"score": 1, "score": 0}')).toThrow(/exactly/);
    expect(() => parse('{"\\u0073core": 0.5}')).not.toThrow();
    expect(() => parse('{"score": {"a": 1, "a": 2}}')).toThrow(/exactly/);
  });

  it('takes a byte-order mark and -0; refuses a score that only underflows to 0', () => {
    expect(parse('\uFEFF{"score": 0.5}')).toBe(0.5);
    expect(Object.is(parse('{"score": -0}'), 0)).toBe(true);
    expect(() => parse('{"score": 1e-400}')).toThrow(/underflow/);
    expect(parse('{"score": 1e-3}')).toBe(0.001);
    expect(parse('{"score": 0e5}')).toBe(0);
  });

  it('refuses prose, extra keys and out-of-range scores', () => {
    for (const raw of [
      'score: 1',
      '{"score": 1, "reason": "x"}',
      '{"score": 1.5}',
      '[1]',
      '{"score": "1"}',
      '{"score": 1} trailing',
    ])
      expect(() => parse(raw)).toThrow();
  });
});

describe('loadWithOptionalPackages', () => {
  it('names a missing optional package and how to install it, instead of the raw module error', async () => {
    const { loadWithOptionalPackages } = await import('./optional-package');
    const { MissingDependencyError } = await import('../core/errors');
    const missing = 'searcher-rl-no-such-package';
    const error = await loadWithOptionalPackages(
      'searcher-rl/example',
      [{ name: missing, install: `npm install ${missing}` }],
      () => import(missing),
    ).catch((e: unknown) => e);
    expect(MissingDependencyError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ subpath: 'searcher-rl/example', packageName: missing });
    expect((error as Error).message).toContain(`npm install ${missing}`);
    // A failure that is not a missing package passes through.
    await expect(
      loadWithOptionalPackages('searcher-rl/example', [{ name: missing, install: 'x' }], () =>
        Promise.reject(new TypeError('boom')),
      ),
    ).rejects.toThrow('boom');
    await expect(
      loadWithOptionalPackages('searcher-rl/example', [], () => Promise.resolve(42)),
    ).resolves.toBe(42);
  });
});
