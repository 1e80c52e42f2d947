import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigValidationError } from '../../core/errors';
import { defineAdapter } from '../../provider-utils/adapter-definition';
import type { SlideCorpus } from './corpus';

/**
 * `adapters.generator: {type: 'slide-reader', corpusPath}`: the slide environment's frozen reader
 * over the corpus written at `corpusPath` (the environment names it: `slideEnvironmentAdapters`).
 */
export const slideReaderAdapter = defineAdapter({
  port: 'generator',
  type: 'slide-reader',
  settings: z.object({ corpusPath: z.string().min(1) }).strict(),
  inputPaths: ['corpusPath'],
  packages: [],
  async create({ corpusPath }, { field }) {
    let corpus: unknown;
    try {
      corpus = JSON.parse(await readFile(corpusPath, 'utf8'));
    } catch (error) {
      throw new ConfigValidationError({
        issues: [
          {
            field: `${field}.corpusPath`,
            message: `cannot read the slide corpus at '${corpusPath}': ${error instanceof Error ? error.message : String(error)}`,
          },
        ],
      });
    }
    const { createSlideReader } = await import('./reader');
    return createSlideReader(corpus as SlideCorpus);
  },
});
