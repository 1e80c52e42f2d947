import { InvalidArgumentError } from '../../core/errors';
import { maxTokensAt } from '../../core/episode/token-budget';
import { createProtocolTokenizer } from '../../core/protocol/tokenizer';
import type { CallOptions } from '../../ports/common';
import type { TokenStep, Tokenizer } from '../../ports/types';
import type {
  ChatFormat,
  GenerateTurnOptions,
  LogProbBatch,
  LossFunction,
  PolicyBackend,
  PolicyCheckpoint,
  RolloutSession,
  TurnOutput,
  UpdateResult,
} from '../../ports/policy-backend';
import { SCRIPTED_LOG_PROB } from './settings';
import { checkCheckpointFormat } from '../../provider-utils/checkpoint-format';

/** What a script function sees for the turn it writes. */
export interface ScriptContext {
  /** Index of the rollout within the session (the order of prompts given to `begin`). */
  rolloutId: number;
  /** Zero-based turn within the episode. */
  turn: number;
  /** The rollout's text so far: prompt, earlier turns and observations. */
  context: string;
  /** The latest observation (the `<information>` block after the previous turn), '' on the first turn. */
  lastObservation: string;
}

/**
 * What the policy says: one list of turns for every rollout, a list per rollout, or a function.
 * Past the end of a list the last turn is repeated.
 */
export type Script =
  | readonly string[]
  | readonly (readonly string[])[]
  | ((context: ScriptContext) => string);

/** Settings of `createScriptedPolicy`: the script, and what the policy reports of itself. */
export interface ScriptedPolicySettings {
  script: Script;
  tokenizer?: Tokenizer;
  /** `text+image` makes the episode pass observation images to `append` (recorded in `calls.append`). */
  modalities?: 'text' | 'text+image';
  /** A context limit to report, as a model would (default: none). */
  contextLength?: number;
  /** Log-prob reported for every token (default 0: a scripted policy is certain of its script). */
  logProb?: number;
  /**
   * The chat format of the model its episodes demonstrate for: the episode wraps the prompt and the
   * observations in it, so that the demonstrations' tokens are the ones that model reads.
   */
  chatFormat?: ChatFormat;
}

/** Every call the scripted policy received, by method, for tests to assert on. */
export interface ScriptedPolicyCalls {
  begin: Array<{ prompts: number }>;
  generateTurn: Array<{ rolloutIds: number[]; options: Omit<GenerateTurnOptions, 'signal'> }>;
  append: Array<{ rolloutId: number; tokens: number; images: number }>;
  logProbs: Array<{ sequences: number }>;
  update: Array<{
    sequences: number;
    value: number;
    gradNewLogProbs: number[][];
    metrics?: Record<string, number>;
  }>;
}

export interface ScriptedPolicy extends PolicyBackend {
  readonly calls: ScriptedPolicyCalls;
}

/**
 * A policy that replays given turns, for unit-testing agents and environments. It tokenizes its
 * script like a real model would emit it (stopping after a closing action tag, truncating at
 * maxTokens) so trajectories, positions and masks are the real thing. It is not trainable:
 * `update` evaluates the loss, records it and leaves the policy as it is (`applied: false`).
 */
export function createScriptedPolicy(settings: ScriptedPolicySettings): ScriptedPolicy {
  const tokenizer = settings.tokenizer ?? createProtocolTokenizer();
  const logProb = settings.logProb ?? SCRIPTED_LOG_PROB;
  if (!(Number.isFinite(logProb) && logProb <= 0))
    throw new InvalidArgumentError({
      argument: 'logProb',
      message: `must be a finite number <= 0, got ${logProb}`,
    });
  const script = settings.script;
  if (typeof script !== 'function' && (!Array.isArray(script) || script.length === 0)) {
    throw new InvalidArgumentError({
      argument: 'script',
      message: 'must be a non-empty array of turns, an array of arrays (one per rollout), or a function',
    });
  }
  const calls: ScriptedPolicyCalls = { begin: [], generateTurn: [], append: [], logProbs: [], update: [] };

  const turnText = (ctx: ScriptContext): string => {
    if (typeof script === 'function') return script(ctx);
    const perRollout = Array.isArray(script[0]);
    const turns =
      (perRollout
        ? (script as readonly (readonly string[])[])[ctx.rolloutId % script.length]
        : (script as readonly string[])) ?? [];
    if (turns.length === 0) return '';
    return turns[Math.min(ctx.turn, turns.length - 1)]!;
  };

  return {
    specificationVersion: 'v1',
    provider: 'scripted',
    modalities: settings.modalities ?? 'text',
    tokenizer,
    trainable: false,
    ...(settings.contextLength !== undefined && { contextLength: settings.contextLength }),
    ...(settings.chatFormat && { chatFormat: settings.chatFormat }),
    calls,
    async begin(promptTokenIds, options?: CallOptions): Promise<RolloutSession> {
      options?.signal?.throwIfAborted();
      calls.begin.push({ prompts: promptTokenIds.length });
      const sequences = promptTokenIds.map((ids) => [...ids]);
      const turns = promptTokenIds.map(() => 0);
      const lastObservation = promptTokenIds.map(() => '');
      let ended = false;
      return {
        size: promptTokenIds.length,
        async generateTurn(rolloutIds, options): Promise<TurnOutput[]> {
          if (ended)
            throw new InvalidArgumentError({ argument: 'session', message: 'generateTurn after end()' });
          options.signal?.throwIfAborted();
          const { signal: _signal, ...rest } = options;
          calls.generateTurn.push({ rolloutIds: [...rolloutIds], options: rest });
          return rolloutIds.map((rolloutId, k) => {
            const sequence = sequences[rolloutId];
            if (!sequence)
              throw new InvalidArgumentError({
                argument: 'rolloutIds',
                message: `no rollout ${rolloutId} in a session of ${sequences.length}`,
              });
            const text = turnText({
              rolloutId,
              turn: turns[rolloutId]!,
              context: tokenizer.decode(sequence),
              lastObservation: lastObservation[rolloutId]!,
            });
            turns[rolloutId]!++;
            const { ids, finishReason } = cutAtStop(
              tokenizer,
              tokenizer.encode(text),
              options.stopAfter,
              maxTokensAt(options, k),
            );
            const steps: TokenStep[] = ids.map((tokenId) => {
              const step = {
                tokenId,
                tokenText: tokenizer.tokenText(tokenId),
                logProb,
                position: sequence.length,
              };
              sequence.push(tokenId);
              return step;
            });
            return { rolloutId, steps, finishReason };
          });
        },
        async append(rolloutId, tokenIds, appendOptions) {
          const sequence = sequences[rolloutId];
          if (!sequence)
            throw new InvalidArgumentError({
              argument: 'rolloutId',
              message: `no rollout ${rolloutId} in a session of ${sequences.length}`,
            });
          if (ended) throw new InvalidArgumentError({ argument: 'session', message: 'append after end()' });
          calls.append.push({
            rolloutId,
            tokens: tokenIds.length,
            images: appendOptions?.images?.length ?? 0,
          });
          sequence.push(...tokenIds);
          lastObservation[rolloutId] = tokenizer.decode(tokenIds);
        },
        async end() {
          ended = true;
        },
      };
    },
    async logProbs(batch: LogProbBatch): Promise<number[][]> {
      calls.logProbs.push({ sequences: batch.inputIds.length });
      return batch.positions.map((row) => row.map(() => logProb));
    },
    async update(batch: LogProbBatch, lossFn: LossFunction): Promise<UpdateResult> {
      const newLogProbs = batch.positions.map((row) => row.map(() => logProb));
      const result = lossFn(newLogProbs);
      let squared = 0;
      for (const row of result.gradNewLogProbs) for (const g of row) squared += g * g;
      calls.update.push({
        sequences: batch.inputIds.length,
        value: result.value,
        gradNewLogProbs: result.gradNewLogProbs,
        ...(result.metrics && { metrics: result.metrics }),
      });
      return {
        value: result.value,
        gradNorm: Math.sqrt(squared),
        applied: false,
        skippedReason: 'the scripted policy is not trainable',
        ...(result.metrics && { metrics: result.metrics }),
      };
    },
    async save(): Promise<PolicyCheckpoint> {
      return {
        format: 'scripted-v1',
        metadata: { logProb, scriptKind: typeof script === 'function' ? 'function' : 'list' },
        blobs: {},
      };
    },
    async load(checkpoint: PolicyCheckpoint): Promise<void> {
      checkCheckpointFormat(checkpoint, 'scripted-v1');
    },
  };
}

/** Truncates generated ids right after the first stop string, or at maxTokens. */
function cutAtStop(
  tokenizer: Tokenizer,
  ids: number[],
  stopAfter: readonly string[],
  maxTokens: number,
): { ids: number[]; finishReason: TurnOutput['finishReason'] } {
  let text = '';
  for (let k = 0; k < ids.length; k++) {
    if (k >= maxTokens) return { ids: ids.slice(0, k), finishReason: 'length' };
    text = tokenizer.decode(ids.slice(0, k + 1));
    if (stopAfter.some((stop) => text.endsWith(stop)))
      return { ids: ids.slice(0, k + 1), finishReason: 'stop' };
  }
  return { ids, finishReason: 'eos' };
}
