import { adaptersFromEntry } from '../../provider-utils/adapter-definition';
import { braveSchema, searchR1Schema, vragSchema } from './settings';

// The entry (and with it the SDK) is loaded by `create` only: naming these definitions loads no undici.
const fromSearchHttpEntry = adaptersFromEntry({ packages: ['undici'], load: () => import('./index') });

/** `adapters.searchEngine: {type: 'search-r1', url, ...}`: Search-R1's retrieval server. */
export const searchR1Adapter = fromSearchHttpEntry({
  port: 'searchEngine',
  type: 'search-r1',
  settings: searchR1Schema,
  create: (entry, settings) => entry.createSearchR1Retriever(settings),
});

/** `adapters.searchEngine: {type: 'vrag', url, ...}`: a VRAG-style image search endpoint. */
export const vragAdapter = fromSearchHttpEntry({
  port: 'searchEngine',
  type: 'vrag',
  settings: vragSchema,
  inputPaths: ['imageRoot'],
  create: (entry, settings) => entry.createVragImageSearch(settings),
});

/** `adapters.searchEngine: {type: 'brave', ...}`: web search with the Brave Search API. */
export const braveAdapter = fromSearchHttpEntry({
  port: 'searchEngine',
  type: 'brave',
  settings: braveSchema,
  create: (entry, settings) => entry.createBraveWebSearch(settings),
});
