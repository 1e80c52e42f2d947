import { InvalidArgumentError } from '../../core/errors';
import type { SearchEngine, SearchOptions } from '../../ports/search-engine';
import type { PageImage, SearchHit } from '../../ports/types';

/** One page the mock search engine can return. */
export interface MockPage {
  basename: string;
  text: string;
  id?: string;
  /** Extra words that match this page (besides those of its text). */
  keywords?: string[];
  image?: PageImage;
}

/** Settings of `createMockSearchEngine`: pages to search, or a keyword knowledge base. */
export interface MockSearchEngineSettings {
  /** Pages to search. */
  pages?: MockPage[];
  /** Seed 004's knowledge base: a keyword (matched case-insensitively in the query) -> information. */
  knowledgeBase?: Record<string, string>;
  /** Make a query fail (to test error handling): return an Error to throw it. */
  failWith?: (query: string) => Error | undefined;
}

export interface MockSearchEngine extends SearchEngine {
  readonly calls: Array<{ query: string; topK: number }>;
}

/** Words too common to say anything about a page. */
const STOP_WORDS = new Set(
  'a an and are as at be by for from has have in is it its of on or that the this to was were what when where which who why with'.split(
    ' ',
  ),
);
const words = (text: string) =>
  (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !STOP_WORDS.has(w));

/**
 * A keyword search engine over in-memory pages. A page's score is the number of distinct query
 * words (stop words aside) it contains; ties keep the page order. With `knowledgeBase` (seed
 * 004's mock) an entry matches when its keyword occurs in the query, case-insensitively, and
 * yields a hit whose text is its information, basename `{keyword}.txt`.
 */
export function createMockSearchEngine(settings: MockSearchEngineSettings = {}): MockSearchEngine {
  const pages: MockPage[] = [...(settings.pages ?? [])];
  const knowledge = Object.entries(settings.knowledgeBase ?? {}).map(([keyword, information]) => ({
    keyword: keyword.toLowerCase(),
    page: { basename: `${keyword}.txt`, text: information },
  }));
  pages.forEach((page, i) => {
    if (typeof page.basename !== 'string' || page.basename.length === 0)
      throw new InvalidArgumentError({
        argument: `pages[${i}].basename`,
        message: 'must be a non-empty string',
      });
    if (typeof page.text !== 'string')
      throw new InvalidArgumentError({ argument: `pages[${i}].text`, message: 'must be a string' });
  });
  const index = pages.map((page) => ({
    page,
    terms: new Set([...words(page.text), ...(page.keywords ?? []).flatMap(words)]),
    phrases: (page.keywords ?? []).map((k) => k.toLowerCase()),
  }));
  const calls: MockSearchEngine['calls'] = [];
  return {
    specificationVersion: 'v1',
    provider: 'mock',
    calls,
    async doSearch(query: string, options: SearchOptions): Promise<SearchHit[]> {
      calls.push({ query, topK: options.topK });
      options.signal?.throwIfAborted();
      const failure = settings.failWith?.(query);
      if (failure) throw failure;
      const lowered = query.toLowerCase();
      const queryTerms = new Set(words(query));
      const fromKnowledge = knowledge
        .filter(({ keyword }) => lowered.includes(keyword))
        .map(({ page }) => ({ page: page as MockPage, score: 1, order: -1 }));
      const scored = index
        .map(({ page, terms, phrases }, order) => {
          let score = 0;
          for (const term of queryTerms) if (terms.has(term)) score++;
          for (const phrase of phrases) if (phrase.includes(' ') && lowered.includes(phrase)) score++;
          return { page, score, order };
        })
        .filter((s) => s.score > 0)
        .concat(fromKnowledge)
        .sort((a, b) => b.score - a.score || a.order - b.order)
        .slice(0, options.topK);
      return scored.map(({ page, score }) => ({
        id: page.id ?? page.basename,
        basename: page.basename,
        score,
        text: page.text,
        ...(page.image && { image: page.image }),
      }));
    },
  };
}
