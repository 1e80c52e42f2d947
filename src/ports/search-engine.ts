import type { CallOptions, SetupCheck } from './common';
import type { SearchHit } from './types';

/** Options of one search. */
export interface SearchOptions extends CallOptions {
  topK: number;
}

/**
 * Finds pages for a query. Implementations return hits best first; the core validates them
 * (a hit without a basename is an unusable answer) and wraps errors as ProviderCallError.
 */
export interface SearchEngine extends SetupCheck {
  readonly specificationVersion: 'v1';
  /** A short name for logs and errors, e.g. `mock`, `sqlite-fts`, `search-r1-http`. */
  readonly provider: string;
  /** Up to `topK` hits for `query`, best first. */
  doSearch(query: string, options: SearchOptions): Promise<SearchHit[]>;
}
