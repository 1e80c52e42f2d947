import { InvalidArgumentError } from '../errors';
import type { PortGateway } from '../calls/gateway';
import { createSystemClock } from '../concurrency/clock';
import type { Clock } from '../../ports/clock';
import type { EpisodeConfig } from '../episode/config';
import type { EpisodeInstance } from '../episode/instances';
import { runEpisodesThrough, type Episode } from '../episode/run-episodes';
import { generateTerminalAnswer } from '../episode/terminal-answer';
import { formatPassed, scoreEpisode, type RewardSettings } from '../reward/score';
import { completeTrajectory, type TerminalAnswer } from '../trajectory/complete';
import type { PipelineStages } from './types';

/** One prompt instance and its n_agent rollouts. */
export interface EpisodeGroup {
  groupId: string;
  instances: EpisodeInstance[];
}

/** A rollout on its way through the stages: the episode and, once asked, the Generator's answer. */
export interface EpisodeSample {
  episode: Episode;
  terminal: TerminalAnswer;
  /** How long its remote calls took, retries included (the unified log's `api.latency`). */
  latency: { generatorMs?: number; judgeMs?: number };
}

/**
 * The Searcher's stages for `runStepPipeline`: a group's episodes in one rollout session (each
 * emitted as it ends), the frozen Generator's terminal answer (searcher mode, when the gateway
 * has a generator and the episode passed the format gate), the reward, and the completed trajectory (answer, reward and advantage).
 */
export function createEpisodeStages(
  gateway: PortGateway,
  settings: {
    episode: Partial<EpisodeConfig> & { mode: EpisodeConfig['mode'] };
    maxEvidence: number;
    reward: RewardSettings;
  },
  clock: Pick<Clock, 'now'> = createSystemClock(),
): PipelineStages<EpisodeGroup, EpisodeSample> {
  const policy = gateway.ports.policy;
  if (!policy)
    throw new InvalidArgumentError({
      argument: 'gateway',
      message: 'createEpisodeStages needs a gateway with a policy (createPortGateway({ policy, ... }))',
    });
  const stages: PipelineStages<EpisodeGroup, EpisodeSample> = {
    groupSize: (group) => group.instances.length,
    async rollout(group, { signal, emit }) {
      await runEpisodesThrough(gateway, group.instances, {
        config: settings.episode,
        signal,
        onEpisode: (episode, index) => emit(index, { episode, terminal: { status: 'skipped' }, latency: {} }),
      });
    },
    async score(sample, { signal }) {
      const started = clock.now();
      try {
        return await scoreEpisode(sample.episode.trajectory, sample.terminal, settings.reward, {
          gateway,
          signal,
        });
      } finally {
        sample.latency.judgeMs = clock.now() - started;
      }
    },
    complete: (sample, reward, advantage) => ({
      ...sample,
      episode: {
        ...sample.episode,
        trajectory: completeTrajectory(sample.episode.trajectory, {
          terminal: sample.terminal,
          reward,
          advantage,
        }),
      },
    }),
  };
  if (settings.episode.mode === 'searcher' && gateway.ports.generator) {
    stages.generate = async (sample, { signal }) => {
      // The expensive call is skipped where the format gate already fixes the reward at 0
      // (budget, context, invalid actions): the answer could not change it (docs/method.md#terminal-answer).
      if (settings.reward.scheme === 'searcher' && !formatPassed(sample.episode.trajectory)) return;
      const started = clock.now();
      try {
        sample.terminal = await generateTerminalAnswer(sample.episode, gateway, {
          policy,
          maxEvidence: settings.maxEvidence,
          mode: settings.episode.mode,
          signal,
        });
      } finally {
        sample.latency.generatorMs = clock.now() - started;
      }
    };
  }
  return stages;
}
