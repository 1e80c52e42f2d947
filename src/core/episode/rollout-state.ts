import { renderAction } from '../protocol/actions';
import { TrajectoryTokens } from '../trajectory/builder';
import type { EvidenceRef, Trajectory } from '../trajectory/trajectory';
import type { Evidence, Tokenizer } from '../../ports/types';
import type { EpisodeConfig } from './config';
import { sampleIdOf, type EpisodeInstance } from './instances';
import { finish, type RolloutState } from './turn-executor';

/** A finished rollout: the serialisable trajectory plus the evidence (with images) it collected. */
export interface Episode {
  trajectory: Trajectory;
  evidence: Evidence[];
}

/**
 * A rollout before its first turn. Shared by the batched loop (`runEpisodesThrough`) and the
 * stepwise one (`beginStepwiseEpisode`), so both start from the same state.
 */
export function newRolloutState(
  instance: EpisodeInstance,
  promptIds: readonly number[],
  provider: string,
): RolloutState {
  return {
    instance,
    tokens: new TrajectoryTokens(promptIds, provider),
    turns: [],
    evidence: [],
    retrieved: [],
    retrievedSet: new Set(),
    lastImage: null,
    observationImages: [],
    invalidActions: 0,
    done: false,
    terminated: null,
    finalAnswer: '',
    error: null,
  };
}

/**
 * Out of turns: the episode closes with a forced completion (searcher mode), which is not policy
 * output (mask 0), and ends with `budget`.
 */
export function closeOutOfTurns(
  state: RolloutState,
  mode: EpisodeConfig['mode'],
  tokenizer: Pick<Tokenizer, 'encode'>,
): void {
  if (state.done) return;
  if (mode === 'searcher') {
    const forced = renderAction({ type: 'search_complete' });
    state.tokens.appendContext(tokenizer.encode(forced), forced);
    state.turns.push({
      index: state.turns.length,
      text: forced,
      forced: true,
      think: null,
      action: { type: 'search_complete' },
      invalid: null,
      ignoredActions: [],
      observation: '',
    });
  }
  finish(state, 'budget');
}

/**
 * The draft trajectory of an ended rollout (reward, advantage and the generator's answer empty).
 * `withTokens: false` leaves its token arrays empty, for scoring only (nothing made per token).
 */
export function toEpisode(state: RolloutState, options: { withTokens?: boolean } = {}): Episode {
  const { instance, tokens } = state;
  const withTokens = options.withTokens ?? true;
  const evidence: EvidenceRef[] = state.evidence.map((e) => ({
    kind: e.kind,
    basename: e.basename,
    ...(e.sourceRegion && { sourceRegion: e.sourceRegion }),
    ...(e.image && { width: e.image.width, height: e.image.height }),
  }));
  const trajectory: Trajectory = {
    formatVersion: 1,
    sampleId: sampleIdOf(instance.groupId, instance.rolloutIndex),
    groupId: instance.groupId,
    promptUid: instance.prompt.uid,
    rolloutIndex: instance.rolloutIndex,
    query: instance.prompt.question,
    reference: instance.prompt.reference ?? null,
    ...(instance.prompt.answers && { answers: [...instance.prompt.answers] }),
    goldenBasenames: [...(instance.prompt.goldenBasenames ?? [])],
    promptLength: tokens.promptLength,
    tokenSteps: withTokens ? [...tokens.tokenSteps] : [],
    generatedText: tokens.generatedText,
    finalAnswer: state.finalAnswer,
    fullInputIds: withTokens ? [...tokens.fullInputIds] : [],
    generatedPositions: withTokens ? [...tokens.generatedPositions] : [],
    lossMask: withTokens ? [...tokens.lossMask] : [],
    turns: state.turns,
    retrievedBasenames: [...state.retrieved],
    evidence,
    terminated: state.terminated ?? 'budget',
    error: state.error,
    invalidActions: state.invalidActions,
    generatorUsage: null,
    reward: null,
    rewardDetail: null,
    advantage: null,
  };
  return { trajectory, evidence: state.evidence };
}
