import { createPortGateway } from '../core/calls/gateway';
import {
  parseSearcherConfig,
  rewardSettingsOf,
  withEnvironmentAdapters,
  type SearcherConfigInput,
} from '../config';
import { createSearcherContainer, TOKENS, closeSearcherContainer } from '../container';
import type { Generator } from '../ports/generator';
import type { ImageOps } from '../ports/image-ops';
import type { Judge } from '../ports/judge';
import type { SearchEngine } from '../ports/search-engine';
import { openServedEnvironment, type ServedEnvironmentChoice } from '../run/environment';
import type { ServedEnvironment } from './environment';

/**
 * What `buildServedEnvironment` serves: the slide environment (default) or your tasks over the
 * ports of a configuration.
 */
export interface ServedEnvironmentSettings extends ServedEnvironmentChoice {
  /** The Searcher's settings (episode, reward, calls, adapters) as for `train`. */
  searcher?: SearcherConfigInput;
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
  // The environment the settings choose (the registry a run chooses from too), and the ports the
  // configuration sets (a judge of your own) over the environment's.
  const { adapters: environment, tasks } = await openServedEnvironment(settings);
  const adapters = withEnvironmentAdapters(environment, settings.searcher?.adapters);
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
    reward: rewardSettingsOf(config.reward),
  };
  return { served, close: () => closeSearcherContainer(container) };
}
