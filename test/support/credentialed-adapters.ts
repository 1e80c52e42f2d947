// Every adapter that sends a credential to a remote server, each as one call against `url` with
// `key` as its credential: the redirect, body-cap and secret checks (tests and the reliability
// figures) run over the same list, so an adapter added here is checked by all of them.
import { createGeminiGenerator, createGeminiJudge } from '../../src/adapters/gemini/index';
import {
  createOpenAIEmbedder,
  createOpenAIGenerator,
  createOpenAIJudge,
} from '../../src/adapters/openai/index';
import { createOpenAICompatibleCompletions } from '../../src/adapters/openai/compatible';
import {
  createBraveWebSearch,
  createSearchR1Retriever,
  createVragImageSearch,
} from '../../src/adapters/search-http/index';

export interface CredentialedAdapter {
  name: string;
  /** The port its errors name. */
  port: 'generator' | 'judge' | 'embedder' | 'policy' | 'searchEngine';
  /** One call of the adapter against `url`; `extra` goes into its settings (`maxResponseBytes`). */
  call: (url: string, key: string, extra?: Record<string, unknown>) => Promise<unknown>;
}

export const CREDENTIALED_ADAPTERS: readonly CredentialedAdapter[] = [
  {
    name: 'openai generator',
    port: 'generator',
    call: (url, key, extra) =>
      createOpenAIGenerator({ model: 'm', apiKey: key, baseURL: `${url}/v1`, ...extra }).doAnswer('q', []),
  },
  {
    name: 'openai judge',
    port: 'judge',
    call: (url, key, extra) =>
      createOpenAIJudge({ model: 'm', apiKey: key, baseURL: `${url}/v1`, ...extra }).doScore('q', 'a', 'b'),
  },
  {
    name: 'openai embedder',
    port: 'embedder',
    call: (url, key, extra) =>
      createOpenAIEmbedder({
        model: 'm',
        dimensions: 4,
        apiKey: key,
        baseURL: `${url}/v1`,
        ...extra,
      }).doEmbed([{ kind: 'text', text: 'x' }]),
  },
  {
    name: 'gemini generator',
    port: 'generator',
    call: (url, key, extra) =>
      createGeminiGenerator({ model: 'm', apiKey: key, baseUrl: url, ...extra }).doAnswer('q', []),
  },
  {
    name: 'gemini judge',
    port: 'judge',
    call: (url, key, extra) =>
      createGeminiJudge({ model: 'm', apiKey: key, baseUrl: url, ...extra }).doScore('q', 'a', 'b'),
  },
  {
    name: 'openai-compatible policy',
    port: 'policy',
    call: (url, key, extra) =>
      createOpenAICompatibleCompletions({
        model: 'm',
        apiKey: key,
        baseURL: `${url}/v1`,
        ...extra,
      }).doComplete({ prompt: [1, 2], max_tokens: 2 }),
  },
  {
    name: 'search-r1 retriever',
    port: 'searchEngine',
    call: (url, key, extra) =>
      createSearchR1Retriever({ url, headers: { authorization: `Bearer ${key}` }, ...extra }).doSearch('q', {
        topK: 1,
      }),
  },
  {
    name: 'vrag image search',
    port: 'searchEngine',
    call: (url, key, extra) =>
      createVragImageSearch({ url, headers: { 'x-api-key': key }, images: 'none', ...extra }).doSearch('q', {
        topK: 1,
      }),
  },
  {
    name: 'brave web search',
    port: 'searchEngine',
    call: (url, key, extra) =>
      createBraveWebSearch({ apiKey: key, baseUrl: url, ...extra }).doSearch('q', { topK: 1 }),
  },
];

/** Every header value a request carried, and its query values (a key may travel as `?key=`). */
export function credentialsIn(headers: Record<string, string | string[] | undefined>, url: string): string {
  return [
    ...Object.values(headers).flatMap((v) => (Array.isArray(v) ? v : v === undefined ? [] : [v])),
    ...new URL(url, 'http://x').searchParams.values(),
  ].join('\n');
}
