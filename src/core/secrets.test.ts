import { describe, expect, it } from 'vitest';
import { PortOutputError, ProviderCallError } from './errors';
import {
  MIN_REGISTERED_SECRET_LENGTH,
  redactAndCut,
  redactDeep,
  redactSecretsIn,
  registerSecret,
  withoutSecretFields,
} from './secrets';

// Each test registers its own keys: the registry is process-wide (one per process, shared by
// every copy of the package), and keys are never unregistered.
const key = (name: string) => `sk-${name}-${'0123456789abcdef'.repeat(2)}`;

describe('the secret registry', () => {
  it('redacts a registered key wherever it is, whole, JSON-escaped or URL-encoded', () => {
    const k = `${key('whole')}"/+`;
    registerSecret(k);
    expect(redactSecretsIn(`a ${k} b ${k}`)).toBe('a [redacted] b [redacted]');
    expect(redactSecretsIn(JSON.stringify({ k }))).toBe('{"k":"[redacted]"}');
    expect(redactSecretsIn(`?key=${encodeURIComponent(k)}&x=1`)).toBe('?key=[redacted]&x=1');
  });

  it('redacts the head or tail of a key cut anywhere (8 characters or more), not shorter bits', () => {
    const k = key('cut');
    registerSecret(k);
    expect(redactSecretsIn(`"${k.slice(0, 20)}" and more`)).toBe('"[redacted]" and more');
    expect(redactSecretsIn(`...${k.slice(-9)} rest`)).toBe('...[redacted] rest');
    expect(redactSecretsIn(`sk-cut-0 is short`)).toBe('[redacted] is short');
    expect(redactSecretsIn(`sk-cut- and 9abcdef`)).toBe('sk-cut- and 9abcdef');
  });

  it('registers nothing shorter than the minimum, and nothing that is not a string', () => {
    registerSecret('short');
    registerSecret(undefined);
    registerSecret(12345678);
    expect(MIN_REGISTERED_SECRET_LENGTH).toBe(8);
    expect(redactSecretsIn('short 12345678')).toBe('short 12345678');
    // A key given for one call is redacted there, whatever its length.
    expect(redactSecretsIn('token abcd', ['abcd'])).toBe('token [redacted]');
  });

  it('redacts before it cuts, and a cut tail that begins a key', () => {
    const k = key('tail');
    registerSecret(k);
    const text = `${'a'.repeat(10)}${k} rest`;
    for (let max = 1; max <= text.length; max++) {
      const out = redactAndCut(text, [], max);
      for (let n = 4; n <= k.length; n++) expect(out).not.toContain(k.slice(0, n));
    }
  });

  it('redacts every string of a record (values and keys), leaving numbers, bytes and unchanged objects as they were', () => {
    const k = key('deep');
    registerSecret(k);
    const bytes = new Uint8Array([1, 2, 3]);
    const clean = { a: [1, 'x'], b: { c: null } };
    const record = { text: `page: ${k}`, nested: [{ [k]: k, n: -0 }], bytes, clean };
    const out = redactDeep(record);
    expect(out).toEqual({
      text: 'page: [redacted]',
      nested: [{ '[redacted]': '[redacted]', n: -0 }],
      bytes,
      clean,
    });
    expect(out.bytes).toBe(bytes);
    expect(out.clean).toBe(clean);
    expect(record.text).toBe(`page: ${k}`);
    expect(redactDeep(clean)).toBe(clean);
  });

  it('keeps keys out of every SearcherError message and the messages of its causes', () => {
    const k = key('error');
    registerSecret(k);
    const raw = `${'x'.repeat(110)}${k}`;
    const output = new PortOutputError({
      port: 'judge',
      provider: 'p',
      field: 'score',
      message: `got ${JSON.stringify(raw.slice(0, 120))}`,
    });
    expect(output.message).not.toContain(k.slice(0, 8));
    const vendor = new Error(`401 for ${k}`, { cause: new Error(`inner ${k}`) });
    const wrapped = new ProviderCallError({ port: 'judge', provider: 'p', message: 'failed', cause: vendor });
    expect((wrapped.cause as Error).message).toBe('401 for [redacted]');
    expect(((wrapped.cause as Error).cause as Error).message).toBe('inner [redacted]');
    expect(String((wrapped.cause as Error).stack)).not.toContain(k);
    const withString = new ProviderCallError({ port: 'judge', provider: 'p', message: 'x', cause: `k=${k}` });
    expect(withString.cause).toBe('k=[redacted]');
  });

  it('takes credential fields out of a configuration, and registers them so they are redacted elsewhere', () => {
    const k = key('config');
    const bearer = key('bearer');
    const config = {
      searcher: {
        adapters: {
          judge: { type: 'openai', model: 'm', apiKey: k },
          searchEngine: {
            type: 'search-r1',
            url: 'http://x',
            headers: { authorization: `Bearer ${bearer}`, accept: 'application/json' },
          },
        },
      },
      seed: 3,
    };
    expect(withoutSecretFields(config)).toEqual({
      searcher: {
        adapters: {
          judge: { type: 'openai', model: 'm' },
          searchEngine: {
            type: 'search-r1',
            url: 'http://x',
            headers: { authorization: '[redacted]', accept: 'application/json' },
          },
        },
      },
      seed: 3,
    });
    expect(redactSecretsIn(`${k}\n${bearer}`)).toBe('[redacted]\n[redacted]');
    expect(config.searcher.adapters.judge.apiKey).toBe(k);
  });
});
