import type { AdaptersConfigInput } from '../../config';
import type { SlideEnvironment } from './build';

/**
 * The offline environment's adapters, as configuration for the composition root
 * (`createSearcherContainer`): BM25 over the slides (SQLite FTS5), sharp crops, the frozen slide
 * reader, the rule judge. The policy and the store are the caller's.
 */
export function slideEnvironmentAdapters(
  env: Pick<SlideEnvironment, 'dbPath' | 'corpusPath'>,
): Pick<AdaptersConfigInput, 'searchEngine' | 'imageOps' | 'generator' | 'judge'> {
  return {
    searchEngine: { type: 'sqlite-fts', dbPath: env.dbPath },
    imageOps: { type: 'sharp' },
    generator: { type: 'slide-reader', corpusPath: env.corpusPath },
    judge: { type: 'rule' },
  };
}

/** Short instructions for small policies (the prompt is part of every sequence trained on). */
export const SLIDE_INSTRUCTIONS =
  'Find the slide that answers the question. Search, crop small print with bbox, then search_complete.';
