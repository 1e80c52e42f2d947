import { randomUUID } from 'node:crypto';
import type { PortGateway } from '../core/calls/gateway';
import type { EpisodeConfig } from '../core/episode/config';
import {
  beginStepwiseEpisode,
  scoreStepwiseEpisode,
  stepEpisode,
  type StepwiseEpisode,
} from '../core/episode/stepwise';
import { InvalidArgumentError } from '../core/errors';
import { createProtocolTokenizer } from '../core/protocol/tokenizer';
import type { RewardSettings } from '../core/reward/score';
import type { PromptRecord } from '../core/types';
import type { Tokenizer } from '../ports/types';
import { dataUri, type ObservationPayload, type StatePayload } from './protocol';

/** What every session of a server shares, read-only: the ports (through one gateway), the tasks, the settings. */
export interface ServedEnvironment {
  gateway: PortGateway;
  tasks: readonly PromptRecord[];
  episode: Partial<EpisodeConfig>;
  reward: RewardSettings;
  /** Bookkeeping ids for the server-side trajectory (default: the protocol byte tokenizer). */
  tokenizer?: Tokenizer;
  name?: string;
  description?: string;
}

/**
 * A client's `reset`: the task (an id or an inline task), a seed and an episode id, all optional.
 */
export interface ResetParameters {
  seed?: number | null;
  episode_id?: string | null;
  task?:
    | string
    | { uid?: string; question: string; reference?: string; answers?: string[]; golden_basenames?: string[] }
    | null;
}

/** The reply to a `step`: the observation, and at the end of the episode its reward. */
export interface StepReply {
  observation: ObservationPayload;
  reward: number | null;
  done: boolean;
}

/**
 * One session's environment (an OpenEnv `Environment`): it holds only its own episode, so
 * sessions cannot see each other's state. Turns and rewards run through the stepwise episode.
 */
export class SessionEnvironment {
  private episode: StepwiseEpisode | null = null;
  private episodeId: string | null = null;
  private steps = 0;
  private readonly taskIndex: ReadonlyMap<string, PromptRecord>;
  private readonly tokenizer: Tokenizer;

  constructor(
    private readonly served: ServedEnvironment,
    taskIndex?: ReadonlyMap<string, PromptRecord>,
  ) {
    this.taskIndex = taskIndex ?? indexTasks(served.tasks);
    this.tokenizer = served.tokenizer ?? createProtocolTokenizer();
  }

  reset(parameters: ResetParameters): StepReply {
    const prompt = this.pickTask(parameters);
    this.episodeId = parameters.episode_id ?? randomUUID();
    this.steps = 0;
    this.episode = beginStepwiseEpisode(
      { prompt, groupId: prompt.uid, rolloutIndex: 0 },
      { config: this.served.episode, tokenizer: this.tokenizer, provider: 'openenv' },
    );
    return {
      observation: { text: this.episode.prompt, images: [], metadata: this.metadata() },
      reward: null,
      done: false,
    };
  }

  async step(
    text: string,
    finishReason?: 'stop' | 'length' | 'eos',
    signal?: AbortSignal,
  ): Promise<StepReply> {
    const episode = this.episode;
    if (!episode)
      throw new InvalidArgumentError({ argument: 'step', message: 'no episode yet; send reset first' });
    const observation = await stepEpisode(episode, text, this.served.gateway, {
      ...(signal && { signal }),
      ...(finishReason && { finishReason }),
    });
    this.steps++;
    const turn = episode.state.turns.at(-1);
    const metadata = this.metadata();
    if (turn?.invalid) metadata.invalid_action = turn.invalid.reason;
    const images = observation.images.map(dataUri);
    if (!observation.done)
      return { observation: { text: observation.text, images, metadata }, reward: null, done: false };
    // The trainer holds the turn's tokens; the server needs the reward, not a token record.
    const scored = await scoreStepwiseEpisode(episode, this.served.gateway, {
      reward: this.served.reward,
      tokens: false,
      ...(signal && { signal }),
    });
    metadata.terminated = scored.trajectory.terminated;
    metadata.reward_status = scored.reward.status;
    metadata.reward_components = { ...scored.reward.components };
    metadata.final_answer = scored.trajectory.finalAnswer;
    if (scored.reward.status === 'missing') metadata.reward_cause = { ...scored.reward.cause };
    return {
      observation: { text: observation.text, images, metadata },
      reward: scored.reward.status === 'ok' ? scored.reward.value : null,
      done: true,
    };
  }

  state(): StatePayload {
    const state = this.episode?.state;
    return {
      episode_id: this.episodeId,
      step_count: this.steps,
      task_id: this.episode?.instance.prompt.uid ?? null,
      done: state?.done ?? false,
      terminated: state?.terminated ?? null,
      invalid_actions: state?.invalidActions ?? 0,
      retrieved: [...(state?.retrieved ?? [])],
    };
  }

  private metadata(): ObservationPayload['metadata'] {
    return { episode_id: this.episodeId!, task_id: this.episode!.instance.prompt.uid, step: this.steps };
  }

  private pickTask(parameters: ResetParameters): PromptRecord {
    const task = parameters.task;
    if (typeof task === 'string') {
      const found = this.taskIndex.get(task);
      if (!found)
        throw new InvalidArgumentError({
          argument: 'reset.task',
          message: `no task '${task}'; GET /tasks lists them`,
        });
      return found;
    }
    if (task) {
      return {
        uid: task.uid ?? `inline-${randomUUID()}`,
        question: task.question,
        ...(task.reference !== undefined && { reference: task.reference }),
        ...(task.answers && { answers: task.answers }),
        ...(task.golden_basenames && { goldenBasenames: task.golden_basenames }),
      };
    }
    const tasks = this.served.tasks;
    if (tasks.length === 0)
      throw new InvalidArgumentError({
        argument: 'reset.task',
        message: 'this server has no task list; pass an inline task {question, reference, golden_basenames}',
      });
    const seed = parameters.seed ?? Math.floor(Math.random() * tasks.length);
    return tasks[seed % tasks.length]!;
  }
}

export function indexTasks(tasks: readonly PromptRecord[]): Map<string, PromptRecord> {
  return new Map(tasks.map((t) => [t.uid, t] as const));
}
