import { createSharpImageOps } from '../../adapters/image/sharp-image-ops';
import { createRuleJudge, type RuleJudge } from '../../adapters/mock/rule-judge';
import { createSqliteSearchEngine, type SqliteSearchEngine } from '../../adapters/search/sqlite-fts';
import type { ImageOps } from '../../ports/image-ops';
import type { SlideEnvironment } from './build';
import { createSlideReader, type SlideReader } from './reader';

export interface SlideEnvironmentPorts {
  searchEngine: SqliteSearchEngine;
  imageOps: ImageOps;
  generator: SlideReader;
  judge: RuleJudge;
}

/** The offline environment's ports: BM25 over the slides, sharp crops, the frozen reader, the rule judge. */
export function slideEnvironmentPorts(env: SlideEnvironment): SlideEnvironmentPorts {
  return {
    searchEngine: createSqliteSearchEngine({ dbPath: env.dbPath }),
    imageOps: createSharpImageOps(),
    generator: createSlideReader(env.corpus),
    judge: createRuleJudge(),
  };
}

/** Short instructions for small policies (the prompt is part of every sequence trained on). */
export const SLIDE_INSTRUCTIONS = 'Find the slide that answers the question. Search, crop small print with bbox, then search_complete.';
