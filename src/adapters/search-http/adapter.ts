import { defineAdapter } from '../../provider-utils/adapter-definition';
import { braveSchema, searchR1Schema, vragSchema } from './settings';

// undici is loaded by `create` only (a dynamic import of the adapter's entry).

/** `adapters.searchEngine: {type: 'search-r1', url, ...}`: Search-R1's retrieval server. */
export const searchR1Adapter = defineAdapter({
  port: 'searchEngine',
  type: 'search-r1',
  settings: searchR1Schema,
  packages: ['undici'],
  create: (settings) => import('./index').then((m) => m.createSearchR1Retriever(settings)),
});

/** `adapters.searchEngine: {type: 'vrag', url, ...}`: a VRAG-style image search endpoint. */
export const vragAdapter = defineAdapter({
  port: 'searchEngine',
  type: 'vrag',
  settings: vragSchema,
  packages: ['undici'],
  create: (settings) => import('./index').then((m) => m.createVragImageSearch(settings)),
});

/** `adapters.searchEngine: {type: 'brave', ...}`: web search with the Brave Search API. */
export const braveAdapter = defineAdapter({
  port: 'searchEngine',
  type: 'brave',
  settings: braveSchema,
  packages: ['undici'],
  create: (settings) => import('./index').then((m) => m.createBraveWebSearch(settings)),
});
