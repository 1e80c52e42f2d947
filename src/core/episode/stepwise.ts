import type { PortGateway } from '../calls/gateway';
import { InvalidArgumentError } from '../errors';
import type { RewardOutcome } from '../reward/combine';
import { formatPassed, scoreEpisode, type RewardSettings } from '../reward/score';
import { completeTrajectory, type TerminalAnswer } from '../trajectory/complete';
import type { Trajectory } from '../trajectory/trajectory';
import type { TurnOutput } from '../../ports/policy-backend';
import type { Evidence, PageImage, Tokenizer } from '../../ports/types';
import { resolveEpisodeConfig, type EpisodeConfig } from './config';
import { checkInstances, type EpisodeInstance } from './instances';
import { buildPrompt } from './prompt';
import { closeOutOfTurns, newRolloutState, toEpisode } from './rollout-state';
import { generateTerminalAnswer } from './terminal-answer';
import { executeTurn, finish, type RolloutState } from './turn-executor';

/**
 * One rollout driven turn by turn from outside (an environment server: the trainer owns the
 * policy and sends each assistant turn as text). The turns run through the same `executeTurn`,
 * the same rollout state and the same trajectory draft as `runEpisodesThrough`; the end runs the
 * same terminal answer, `scoreEpisode` and `completeTrajectory` as the pipeline.
 */
export interface StepwiseEpisode {
  readonly instance: EpisodeInstance;
  readonly config: EpisodeConfig;
  /** The policy's first observation: the instructions and the question. */
  readonly prompt: string;
  readonly state: RolloutState;
  /** Bookkeeping ids for the server-side trajectory; the trainer tokenizes with its own model. */
  readonly tokenizer: Tokenizer;
}

/** What the policy sees after a step: the observation text, its images, and whether the episode ended. */
export interface StepObservation {
  text: string;
  images: PageImage[];
  done: boolean;
}

export interface StepwiseOptions {
  config?: Partial<EpisodeConfig>;
  tokenizer: Tokenizer;
  /** Recorded as the trajectory's token provider. */
  provider?: string;
}

export function beginStepwiseEpisode(instance: EpisodeInstance, options: StepwiseOptions): StepwiseEpisode {
  checkInstances([instance]);
  const config = resolveEpisodeConfig(options.config);
  const prompt = buildPrompt(instance.prompt.question, config.mode, config.instructions);
  const state = newRolloutState(instance, options.tokenizer.encode(prompt), options.provider ?? 'external');
  return { instance, config, prompt, state, tokenizer: options.tokenizer };
}

/**
 * Runs one assistant turn: parse, execute (search, crop, end), render the observation. The turn
 * budget ends the episode as in-process rollouts do (the forced `<search_complete>` after the last
 * turn). The context window is the trainer's; it is enforced here only when
 * `config.maxContextTokens` is set (counted in the bookkeeping tokenizer's ids).
 */
export async function stepEpisode(
  episode: StepwiseEpisode,
  text: string,
  gateway: PortGateway,
  options: { signal?: AbortSignal; finishReason?: TurnOutput['finishReason'] } = {},
): Promise<StepObservation> {
  const signal = options.signal;
  const { state, config, tokenizer } = episode;
  if (state.done)
    throw new InvalidArgumentError({
      argument: 'step',
      message: 'the episode is done; reset to start another',
    });
  if (typeof text !== 'string')
    throw new InvalidArgumentError({
      argument: 'step.text',
      message: 'must be a string (the assistant turn)',
    });
  const turn = state.turns.length;
  state.tokens.appendExternalPolicy(tokenizer.encode(text), text, (id) => tokenizer.tokenText(id));
  const record = await executeTurn(
    state,
    turn,
    text,
    options.finishReason ?? 'stop',
    gateway,
    config,
    signal,
  );
  state.turns.push(record);
  if (state.done) return { text: '', images: [], done: true };
  const observationIds = tokenizer.encode(record.observation);
  if (
    config.maxContextTokens !== null &&
    state.tokens.length + observationIds.length > config.maxContextTokens
  ) {
    finish(state, 'context');
    return { text: '', images: [], done: true };
  }
  state.tokens.appendContext(observationIds, record.observation);
  const observation = { text: record.observation, images: [...state.observationImages], done: false };
  if (state.turns.length >= config.maxTurns) {
    closeOutOfTurns(state, config.mode, tokenizer);
    observation.done = true;
  }
  return observation;
}

/** An ended episode with its reward: the completed trajectory and the evidence it collected. */
export interface ScoredEpisode {
  trajectory: Trajectory;
  evidence: Evidence[];
  reward: RewardOutcome;
  terminal: TerminalAnswer;
}

export interface ScoreStepwiseOptions {
  reward: RewardSettings;
  signal?: AbortSignal;
  /**
   * `false`: the trajectory without its token arrays (`tokenSteps`, `fullInputIds`, `lossMask`,
   * `generatedPositions` empty), for an environment server, whose trainer holds the real tokens:
   * scoring then makes nothing per token. Default `true`.
   */
  tokens?: boolean;
}

/**
 * The end of an episode as the pipeline does it: the frozen Generator's answer (skipped where the
 * format gate already fixes the reward), the reward, the completed trajectory. A reward that
 * could not be computed is `missing` with its cause, never 0.
 */
export async function scoreStepwiseEpisode(
  episode: StepwiseEpisode,
  gateway: PortGateway,
  options: ScoreStepwiseOptions,
): Promise<ScoredEpisode> {
  if (!episode.state.done)
    throw new InvalidArgumentError({ argument: 'episode', message: 'is not done yet' });
  const withTokens = options.tokens ?? true;
  const draft = toEpisode(episode.state, { withTokens });
  const { config } = episode;
  let terminal: TerminalAnswer = { status: 'skipped' };
  const gatePassed = options.reward.scheme !== 'searcher' || formatPassed(draft.trajectory);
  if (config.mode === 'searcher' && gateway.ports.generator && gatePassed) {
    terminal = await generateTerminalAnswer(draft, gateway, {
      policy: { tokenizer: episode.tokenizer },
      maxEvidence: config.maxEvidence,
      mode: config.mode,
      ...(options.signal && { signal: options.signal }),
    });
  }
  const reward = await scoreEpisode(draft.trajectory, terminal, options.reward, {
    gateway,
    ...(options.signal && { signal: options.signal }),
  });
  const trajectory = completeTrajectory(draft.trajectory, { terminal, reward });
  return {
    // Without tokens, not the answer block's either (the arrays stay empty, not a fragment).
    trajectory: withTokens ? trajectory : { ...trajectory, fullInputIds: [], lossMask: [] },
    evidence: draft.evidence,
    reward,
    terminal,
  };
}
