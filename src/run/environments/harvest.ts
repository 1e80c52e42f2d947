import type { SearcherConfig } from '../../config';
import { createRandom, permutation, RANDOM_STREAMS } from '../../core/random';
import type { PromptRecord } from '../../core/types';
import type { SearcherPorts } from '../../searcher';
import type { RunConfig } from '../config';
import { harvestDemonstrations } from '../demonstrator';
import type { RunOptions } from '../progress';
import type { DemonstrationTarget } from './types';

/**
 * The generic demonstrator's episodes on `count` training questions, a seeded sample of them (not
 * the first rows): the warm start of a slide run by rejection sampling and of a run on your own data.
 */
export function harvestSampled(
  config: RunConfig,
  train: readonly PromptRecord[],
  count: number,
  how: {
    ports: Omit<SearcherPorts, 'policy'>;
    target: DemonstrationTarget;
    episode: SearcherConfig['episode'];
    keepPerQuestion: number;
    firstSuccess?: boolean;
    cropBy?: 'region' | 'location';
    thinkBeforeCrop?: boolean;
    /** Skip the sample's first `skip` questions (the ones an earlier harvest of this run took). */
    skip?: number;
    options: RunOptions;
  },
) {
  const skip = how.skip ?? 0;
  const questions = permutation(train.length, createRandom(config.seed, RANDOM_STREAMS.sftQuestions))
    .slice(skip, skip + count)
    .map((i) => train[i]!);
  const { adapters: _adapters, ...sections } = config.searcher;
  return harvestDemonstrations({
    prompts: questions,
    ports: how.ports,
    tokenizer: how.target.tokenizer,
    chatFormat: how.target.chatFormat,
    searcher: { ...sections, episode: how.episode },
    keepPerQuestion: how.keepPerQuestion,
    ...(how.firstSuccess && { firstSuccess: true }),
    ...(how.cropBy && { cropBy: how.cropBy }),
    ...(how.thinkBeforeCrop && { thinkBeforeCrop: true }),
    options: how.options,
  });
}
