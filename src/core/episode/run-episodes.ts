import { createPortGateway, singleAttemptPolicies, type PortGateway } from '../calls/gateway';
import { AbortedError, InvalidArgumentError } from '../errors';
import { TURN_STOP_TAGS } from '../protocol/tags';
import type { ImageOps } from '../../ports/image-ops';
import type { PolicyBackend } from '../../ports/policy-backend';
import type { SearchEngine } from '../../ports/search-engine';
import { episodeContextTokens, resolveEpisodeConfig, type EpisodeConfig } from './config';
import { checkInstances, type EpisodeInstance } from './instances';
import { buildPrompt } from './prompt';
import { closeOutOfTurns, newRolloutState, toEpisode, type Episode } from './rollout-state';
import { executeTurn, finish, type RolloutState } from './turn-executor';

export type { Episode } from './rollout-state';

/** The ports an episode calls: the policy and the search engine, and image ops for crops. */
export interface EpisodePorts {
  policy: PolicyBackend;
  searchEngine: SearchEngine;
  /** Needed for `<bbox>`; without it a bbox is an invalid action. */
  imageOps?: ImageOps;
}

/** Options of `runEpisodes`: the episode configuration, cancellation and a per-episode callback. */
export interface RunEpisodesOptions {
  config?: Partial<EpisodeConfig>;
  signal?: AbortSignal;
  /** Called as each episode ends (before the others of the batch), with its index in `instances`. */
  onEpisode?: (episode: Episode, index: number) => void;
}

/**
 * Runs a batch of episodes in lockstep: every active rollout generates its next turn in one
 * `generateTurn` call, actions run concurrently, observations are appended with loss mask 0.
 * A failing search, crop or policy call ends only the episodes it concerns (`terminated:
 * 'error'`, with the stage and message); an abort ends all, once every call has settled.
 * The ports are called plainly (once, no timeout); `createSearcher` runs episodes through its
 * gateway with the configured retries and limits.
 */
export function runEpisodes(
  instances: readonly EpisodeInstance[],
  ports: EpisodePorts,
  options: RunEpisodesOptions = {},
): Promise<Episode[]> {
  const gateway = createPortGateway(
    {
      policy: ports.policy,
      searchEngine: ports.searchEngine,
      ...(ports.imageOps && { imageOps: ports.imageOps }),
    },
    singleAttemptPolicies(),
  );
  return runEpisodesThrough(gateway, instances, options);
}

/** `runEpisodes` over a gateway that has the policy, the search engine and (for crops) image ops. */
export async function runEpisodesThrough(
  gateway: PortGateway,
  instances: readonly EpisodeInstance[],
  options: RunEpisodesOptions = {},
): Promise<Episode[]> {
  const config = resolveEpisodeConfig(options.config);
  const policy = gateway.ports.policy;
  const signal = options.signal;
  checkInstances(instances);
  if (!policy)
    throw new InvalidArgumentError({
      argument: 'gateway',
      message: 'runEpisodesThrough needs a gateway with a policy (createPortGateway({ policy, ... }))',
    });
  const contextTokens = episodeContextTokens(config, policy);
  if (instances.length === 0) return [];
  if (signal?.aborted) throw new AbortedError({ what: 'runEpisodes', cause: signal.reason });

  const wrapPrompt = (text: string) => policy.chatFormat?.prompt(text) ?? text;
  const promptIds = instances.map((instance) =>
    policy.tokenizer.encode(
      wrapPrompt(buildPrompt(instance.prompt.question, config.mode, config.instructions)),
    ),
  );
  const states: RolloutState[] = instances.map((instance, i) =>
    newRolloutState(instance, promptIds[i]!, policy.provider),
  );

  // An ended episode is built once: the object emitted early is the one returned at the end.
  const ended = new Map<number, Episode>();
  const emit = (id: number) => {
    if (ended.has(id) || !states[id]!.done) return;
    const episode = toEpisode(states[id]!);
    ended.set(id, episode);
    options.onEpisode?.(episode, id);
  };
  const fail = (id: number, stage: string, error: unknown) => {
    const state = states[id]!;
    state.error = { stage, message: error instanceof Error ? error.message : String(error) };
    finish(state, 'error');
    emit(id);
  };

  // A prompt that leaves no room to act ends its episode with `context` before the model sees it;
  // the session holds the others (session rollout ids are their places among the fitting ones).
  const fitting: number[] = [];
  states.forEach((state, id) => {
    if (state.tokens.length >= contextTokens) {
      finish(state, 'context');
      emit(id);
    } else fitting.push(id);
  });
  if (fitting.length === 0) return states.map((_state, id) => ended.get(id)!);
  const rolloutOf = new Map(fitting.map((id, row) => [id, row] as const));
  const session = await gateway.beginSession(
    fitting.map((id) => promptIds[id]!),
    signal,
  );
  let aborted: unknown = null;
  try {
    for (let turn = 0; turn < config.maxTurns && aborted === null; turn++) {
      const active: number[] = [];
      for (const id of fitting) {
        const state = states[id]!;
        if (state.done) continue;
        if (state.tokens.length >= contextTokens) {
          finish(state, 'context');
          emit(id);
        } else active.push(id);
      }
      if (active.length === 0) break;
      // Each rollout's own budget: one rollout near its context limit does not cut the others short.
      const maxTokens = active.map((id) =>
        Math.min(config.maxTurnTokens, contextTokens - states[id]!.tokens.length),
      );
      let results;
      try {
        const rows = await gateway.generateTurn(
          session,
          active.map((id) => rolloutOf.get(id)!),
          {
            stopAfter: TURN_STOP_TAGS,
            maxTokens,
            temperature: config.temperature,
            topP: config.topP,
            ...(signal && { signal }),
          },
        );
        results = rows.map((result, k) => ({ ...result, rolloutId: active[k]! }));
      } catch (error) {
        if (AbortedError.isInstance(error)) {
          aborted = error;
          break;
        }
        for (const id of active) fail(id, 'policy', error);
        break;
      }

      const settled = await Promise.allSettled(
        results.map(async (result) => {
          const id = result.rolloutId;
          const state = states[id]!;
          try {
            if (result.error) throw result.error;
            const output = result.output;
            const text = policy.tokenizer.decode(output.steps.map((s) => s.tokenId));
            state.tokens.appendPolicy(output.steps, text);
            const record = await executeTurn(state, turn, text, output.finishReason, gateway, config, signal);
            state.turns.push(record);
            if (state.done) {
              emit(id);
              return;
            }
            const observed = policy.chatFormat?.observation(record.observation) ?? record.observation;
            const ids = policy.tokenizer.encode(observed);
            // An observation that does not fit ends the episode instead of overflowing the window.
            if (state.tokens.length + ids.length > contextTokens) {
              finish(state, 'context');
              emit(id);
              return;
            }
            const images = policy.modalities === 'text+image' ? state.observationImages : [];
            await gateway.appendObservation(session, rolloutOf.get(id)!, ids, {
              ...(signal && { signal }),
              ...(images.length > 0 && { images }),
            });
            // The ids are what the policy reads (in its chat template); the text is the protocol's, which
            // Search-R1's format check reads: each </search> followed by its <information>.
            state.tokens.appendContext(ids, record.observation);
          } catch (error) {
            if (AbortedError.isInstance(error)) throw error;
            fail(id, 'policy', error);
          }
        }),
      );
      const abortedTurn = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (abortedTurn) aborted = abortedTurn.reason;
    }
    if (aborted === null) {
      // Out of turns: close the episode with a forced completion. It is not policy output (mask 0).
      for (const state of states) closeOutOfTurns(state, config.mode, policy.tokenizer);
      states.forEach((_state, id) => emit(id));
    }
  } finally {
    await session.end();
  }
  if (aborted !== null) throw aborted;
  return states.map((_state, id) => ended.get(id)!);
}
