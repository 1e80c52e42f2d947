import { describe, expect, it } from 'vitest';
import { faultSuite } from '../../../test/support/fault-suite';
import { serverPerTest } from '../../../test/support/server-per-test';
import { RecordedServer } from '../../../test/support/recorded-server';
import { ConfigValidationError, PortOutputError } from '../../core/errors';
import { withReliability } from '../../core/calls/with-reliability';
import fixtures from './__fixtures__/embeddings.json';
import responses from './__fixtures__/responses.json';
import { createOpenAIEmbedder } from './embedder';

const CANARY = 'sk-canary-0a1b2c3d4e5f60718293a4b5c6d7e8f9';
const server = serverPerTest(() => RecordedServer.start());

const texts = [
  { kind: 'text' as const, text: 'river boat add 3 and 4' },
  { kind: 'text' as const, text: 'cloud rain sum 2 and 5' },
];

describe('createOpenAIEmbedder', () => {
  it('posts the texts to /embeddings and returns the vectors in input order, L2-normalised', async () => {
    server().reply({ json: fixtures.embeddings });
    const embedder = createOpenAIEmbedder({
      model: 'text-embedding-3-small',
      dimensions: 3,
      apiKey: CANARY,
      baseURL: `${server().url}/v1`,
    });
    const vectors = await embedder.doEmbed(texts);
    expect(vectors[0]!.map((x) => Number(x.toFixed(4)))).toEqual([0.6, 0.8, 0]);
    expect(vectors[1]!.map((x) => Number(x.toFixed(4)))).toEqual([0, 0.6, 0.8]);
    const request = server().requests[0]!;
    expect(request.path).toBe('/v1/embeddings');
    expect(request.headers.authorization).toBe(`Bearer ${CANARY}`);
    expect(request.json).toEqual({
      model: 'text-embedding-3-small',
      input: texts.map((t) => t.text),
      encoding_format: 'float',
      dimensions: 3,
    });
  });

  it('fails on a wrong count of vectors or dimensions, and validates its settings', async () => {
    server().reply({ json: { ...fixtures.embeddings, data: fixtures.embeddings.data.slice(0, 1) } });
    const embedder = createOpenAIEmbedder({
      model: 'm',
      dimensions: 3,
      apiKey: CANARY,
      baseURL: `${server().url}/v1`,
    });
    expect(PortOutputError.isInstance(await embedder.doEmbed(texts).catch((e: unknown) => e))).toBe(true);
    server().reply({ json: fixtures.embeddings });
    const wrongSize = withReliability(
      createOpenAIEmbedder({
        model: 'm',
        dimensions: 4,
        sendDimensions: false,
        apiKey: CANARY,
        baseURL: `${server().url}/v1`,
      }),
      'embedder',
    );
    expect(await wrongSize.doEmbed(texts).catch((e: unknown) => (e as Error).message)).toMatch(
      /expected 4 numbers/,
    );
    expect(() => createOpenAIEmbedder({ model: 'm', dimensions: 0 })).toThrowError(ConfigValidationError);
  });

  faultSuite({
    server,
    port: 'embedder',
    adapter: () =>
      createOpenAIEmbedder({
        model: 'text-embedding-3-small',
        dimensions: 3,
        apiKey: CANARY,
        baseURL: `${server().url}/v1`,
      }),
    call: (embedder, signal) => embedder.doEmbed(texts, { signal }),
    success: { json: fixtures.embeddings },
    rateLimited: { status: 429, json: responses.rate_limited },
    serverError: { status: 500, json: responses.server_error },
    check: (vectors) => expect(vectors).toHaveLength(2),
  });
});
