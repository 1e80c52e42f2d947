import { createPortGateway } from '../core/calls/gateway';
import type { PromptRecord } from '../core/types';
import { parseSearcherConfig, withEnvironmentAdapters, type SearcherConfigInput } from '../config';
import { createSearcherContainer, TOKENS, closeSearcherContainer } from '../container';
import { slideEnvironmentAdapters } from '../env/slides/adapters-config';
import { buildSlideEnvironment } from '../env/slides/build';
import type { SlideCorpusSettings } from '../env/slides/corpus';
import type { Generator } from '../ports/generator';
import type { ImageOps } from '../ports/image-ops';
import type { Judge } from '../ports/judge';
import type { SearchEngine } from '../ports/search-engine';
import { readPromptDataset } from '../run/dataset';
import { resolveRewardWeights } from '../core/reward/combine';
import type { ServedEnvironment } from './environment';

/**
 * What `buildServedEnvironment` serves: the slide environment (default) or your tasks over the
 * ports of a configuration.
 */
export interface ServedEnvironmentSettings {
  /** The Searcher's settings (episode, reward, calls, adapters) as for `train`. */
  searcher?: SearcherConfigInput;
  /** The offline slide environment (default): its corpus settings and cache folder. */
  slides?: Partial<SlideCorpusSettings> & { cacheDir: string; split?: 'train' | 'validation' | 'test' };
  /** The user's ports instead: `searcher.adapters` and the tasks (PromptRecord JSONL). */
  tasksFile?: string;
}

/**
 * The environment a server serves, through the composition root: the slide environment's adapters
 * and questions, or the configured adapters with a task file. The context window is the trainer's
 * (`episode.maxContextTokens` is ignored: the server cannot count the trainer's tokens).
 */
export async function buildServedEnvironment(settings: ServedEnvironmentSettings): Promise<{
  served: ServedEnvironment;
  /** Closes the ports opened for it (its composition root). */
  close(): Promise<void>;
}> {
  let adapters = settings.searcher?.adapters;
  let tasks: PromptRecord[];
  if (settings.tasksFile) {
    // The trainer's dataset reader: UTF-8 or refused naming the line, every row an object, checked.
    tasks = await readPromptDataset(settings.tasksFile);
  } else {
    const {
      cacheDir,
      split = 'train',
      ...corpus
    } = settings.slides ?? { cacheDir: '.cache/searcher-rl/slides' };
    const env = await buildSlideEnvironment(cacheDir, corpus);
    // The ports the configuration sets (a judge of your own) over the slide environment's.
    adapters = withEnvironmentAdapters(slideEnvironmentAdapters(env), adapters);
    tasks = env.corpus.questions[split];
  }
  const config = parseSearcherConfig({ ...settings.searcher, adapters });
  const container = createSearcherContainer(config);
  const [searchEngine, generator, judge, imageOps] = await Promise.all([
    container.getAsync<SearchEngine>(TOKENS.SearchEngine),
    container.getAsync<Generator>(TOKENS.Generator),
    container.getAsync<Judge>(TOKENS.Judge),
    container.getAsync<ImageOps>(TOKENS.ImageOps),
  ]);
  const gateway = createPortGateway({ searchEngine, generator, judge, imageOps }, config.calls);
  const served: ServedEnvironment = {
    gateway,
    tasks,
    episode: { ...config.episode, maxContextTokens: null },
    reward: {
      scheme: config.reward.scheme,
      weights: resolveRewardWeights(config.reward.weights),
      ndcgK: config.reward.ndcgK,
      ndcgIdeal: config.reward.ndcgIdeal,
    },
  };
  return { served, close: () => closeSearcherContainer(container) };
}
