import type { z } from 'zod';
import { ProviderCallError } from '../../core/errors';
import { headerSecrets, loadApiKey, parseSettings, readCapped } from '../../provider-utils/index';
import { basename } from '../../core/reward/ndcg';
import type { SearchEngine, SearchOptions } from '../../ports/search-engine';
import { httpJson, shapeError } from './http';
import { imageInfo } from './image-size';
import { readImageUnderRoot } from './image-file';
import type { PageImage, SearchHit } from '../../ports/types';
import { braveSchema, searchR1Schema, vragSchema } from './settings';

const trimSlash = (url: string) => {
  let end = url.length;
  while (end > 0 && url[end - 1] === '/') end--;
  return url.slice(0, end);
};

/**
 * Search-R1's retrieval server: `POST /retrieve {queries, topk, return_scores}` answers
 * `{result: [[{document: {id, contents}, score}]]}`. A hit's basename is the document id; its
 * text is the document's contents (`"Title"\ntext`).
 */
export function createSearchR1Retriever(settings: z.input<typeof searchR1Schema>): SearchEngine {
  const { url, headers, maxResponseBytes } = parseSettings(
    'createSearchR1Retriever',
    searchR1Schema,
    settings,
  );
  const provider = 'search-r1-http';
  return {
    specificationVersion: 'v1',
    provider,
    async doSearch(query: string, options: SearchOptions): Promise<SearchHit[]> {
      const json = (await httpJson({
        provider,
        method: 'POST',
        url: `${trimSlash(url)}/retrieve`,
        body: { queries: [query], topk: options.topK, return_scores: true },
        ...(headers && { headers }),
        secrets: headerSecrets(headers),
        maxResponseBytes,
        ...(options.signal && { signal: options.signal }),
      })) as {
        result?: unknown;
      };
      const first = Array.isArray(json?.result) ? json.result[0] : undefined;
      if (!Array.isArray(first))
        throw shapeError(provider, 'result', 'expected {result: [[{document, score}]]}');
      return first.map((item: unknown, i: number) => {
        const entry = item as {
          document?: { id?: unknown; contents?: unknown };
          score?: unknown;
          id?: unknown;
          contents?: unknown;
        };
        // return_scores=false servers answer bare documents; accept both.
        const doc = entry.document ?? entry;
        if ((typeof doc.id !== 'string' && typeof doc.id !== 'number') || typeof doc.contents !== 'string')
          throw shapeError(provider, `result[0][${i}].document`, 'expected {id, contents}');
        return {
          id: String(doc.id),
          basename: String(doc.id),
          text: doc.contents,
          score: typeof entry.score === 'number' ? entry.score : 0,
        };
      });
    },
  };
}

/**
 * A VRAG-style image search endpoint: `POST /search {queries, top_k, vrag_ret: true}` (or the
 * older `GET /search?queries=q`) answers `[[{idx, image_file}]]`. A hit's basename is the image
 * file's name, so NDCG compares it with golden page basenames.
 */
export function createVragImageSearch(settings: z.input<typeof vragSchema>): SearchEngine {
  const config = parseSettings('createVragImageSearch', vragSchema, settings);
  const provider = 'vrag-http';
  const loadImage = async (
    path: string,
    field: string,
    signal?: AbortSignal,
  ): Promise<PageImage | undefined> => {
    if (config.images === 'none') return undefined;
    let bytes: Uint8Array;
    if (config.images === 'file') {
      bytes = await readImageUnderRoot({
        provider,
        field,
        path,
        imageRoot: config.imageRoot ?? '.',
        maxBytes: config.maxImageBytes,
        signal,
      });
    } else {
      const { request } = await import('undici');
      // By basename only, so the server's path cannot point elsewhere under baseUrl; no credential is sent.
      const response = await request(
        `${trimSlash(config.images.baseUrl)}/${encodeURI(basename(path))}`,
        signal ? { signal } : {},
      );
      if (response.statusCode >= 400) {
        await response.body.dump();
        throw new ProviderCallError({
          port: 'searchEngine',
          provider,
          status: response.statusCode,
          message: `cannot fetch page image ${basename(path)}`,
        });
      }
      const length = response.headers['content-length'];
      bytes = await readCapped({ port: 'searchEngine', provider }, response.body, {
        maxBytes: config.maxImageBytes,
        contentLength: typeof length === 'string' ? length : undefined,
        setting: 'maxImageBytes',
      });
    }
    const info = imageInfo(bytes);
    if (!info) throw shapeError(provider, 'image_file', `${basename(path)} is not a PNG or JPEG image`);
    return { ...info, bytes };
  };
  return {
    specificationVersion: 'v1',
    provider,
    async doSearch(query: string, options: SearchOptions): Promise<SearchHit[]> {
      const common = {
        provider,
        ...(config.headers && { headers: config.headers }),
        secrets: headerSecrets(config.headers),
        maxResponseBytes: config.maxResponseBytes,
        ...(options.signal && { signal: options.signal }),
      };
      const json =
        config.method === 'POST'
          ? await httpJson({
              ...common,
              method: 'POST',
              url: `${trimSlash(config.url)}/search`,
              body: { queries: [query], top_k: options.topK, vrag_ret: true },
            })
          : await httpJson({
              ...common,
              method: 'GET',
              url: `${trimSlash(config.url)}/search?${new URLSearchParams({ queries: query }).toString()}`,
            });
      const first = Array.isArray(json) ? json[0] : undefined;
      if (!Array.isArray(first)) throw shapeError(provider, '[0]', 'expected [[{idx, image_file}]]');
      const hits = first.slice(0, options.topK).map((item: unknown, i: number) => {
        const entry = item as { image_file?: unknown; idx?: unknown; score?: unknown };
        if (typeof entry.image_file !== 'string')
          throw shapeError(provider, `[0][${i}].image_file`, 'expected a path');
        return { entry, path: entry.image_file, rank: i };
      });
      return Promise.all(
        hits.map(async ({ entry, path, rank }) => {
          const image = await loadImage(path, `[0][${rank}].image_file`, options.signal);
          return {
            id: path,
            basename: basename(path),
            score: typeof entry.score === 'number' ? entry.score : 1 / (rank + 1),
            ...(image && { image }),
          };
        }),
      );
    },
  };
}

/**
 * Web search with the Brave Search API (`GET /res/v1/web/search`). A hit's id and basename are
 * its URL; its text is the title and the description, without markup.
 */
export function createBraveWebSearch(settings: z.input<typeof braveSchema> = {}): SearchEngine {
  const config = parseSettings('createBraveWebSearch', braveSchema, settings);
  const provider = 'brave-web';
  const apiKey = () =>
    loadApiKey({
      apiKey: config.apiKey,
      environmentVariableNames: ['BRAVE_SEARCH_API_KEY'],
      vendor: 'Brave Search',
      factory: 'createBraveWebSearch',
    });
  return {
    specificationVersion: 'v1',
    provider,
    async doCheck() {
      apiKey();
    },
    async doSearch(query: string, options: SearchOptions): Promise<SearchHit[]> {
      const key = apiKey();
      const params = new URLSearchParams({ q: query, count: String(Math.min(20, options.topK)) });
      if (config.country) params.set('country', config.country);
      if (config.safesearch) params.set('safesearch', config.safesearch);
      const json = (await httpJson({
        provider,
        method: 'GET',
        url: `${trimSlash(config.baseUrl)}/res/v1/web/search?${params}`,
        headers: { 'x-subscription-token': key },
        secrets: [key],
        maxResponseBytes: config.maxResponseBytes,
        // Brave says when the window resets in X-RateLimit-Reset (seconds, per window; the first is the shortest).
        retryAfter: (headers) => {
          const reset = Number.parseFloat(String(headers['x-ratelimit-reset'] ?? '').split(',')[0] ?? '');
          return Number.isFinite(reset) ? reset * 1000 : undefined;
        },
        ...(options.signal && { signal: options.signal }),
      })) as {
        web?: { results?: unknown };
      };
      const results = json?.web?.results ?? [];
      if (!Array.isArray(results)) throw shapeError(provider, 'web.results', 'expected an array');
      return results.slice(0, options.topK).map((item: unknown, i: number) => {
        const r = item as { url?: unknown; title?: unknown; description?: unknown };
        if (typeof r.url !== 'string') throw shapeError(provider, `web.results[${i}].url`, 'expected a URL');
        const text = [r.title, r.description]
          .filter((t): t is string => typeof t === 'string')
          .join('\n')
          .replace(/<[^<>]*>/g, '');
        return { id: r.url, basename: r.url, text, score: 1 / (i + 1) };
      });
    },
  };
}
