import { AbortedError, InvalidArgumentError, PortOutputError } from '../core/errors';
import type { CallOptions } from '../ports/common';
import type { GenerateTurnOptions, LogProbBatch, LossFunction } from '../ports/policy-backend';

// The checks every in-process policy backend (tfjs, Llama) makes on a batch to score and on what
// the core's loss returns, so that a bad batch is refused the same way whichever engine runs it.

/** Checks a batch against the model; returns the temperature to score at (greedy, 0, scores at 1). */
export function checkLogProbBatch(
  batch: LogProbBatch,
  model: { contextLength: number; vocabSize: number },
): number {
  const { contextLength, vocabSize } = model;
  if (
    !batch ||
    !Array.isArray(batch.inputIds) ||
    !Array.isArray(batch.positions) ||
    batch.inputIds.length !== batch.positions.length
  ) {
    throw new InvalidArgumentError({
      argument: 'batch',
      message: 'needs inputIds and positions arrays of the same length',
    });
  }
  batch.inputIds.forEach((ids, i) => {
    if (ids.length > contextLength)
      throw new InvalidArgumentError({
        argument: `batch.inputIds[${i}]`,
        message: `has ${ids.length} tokens; the model's context is ${contextLength}`,
      });
    ids.forEach((id, t) => {
      if (!(Number.isInteger(id) && id >= 0 && id < vocabSize))
        throw new InvalidArgumentError({
          argument: `batch.inputIds[${i}][${t}]`,
          message: `token id ${id} is outside the vocabulary (0..${vocabSize - 1})`,
        });
    });
    batch.positions[i]!.forEach((p, k) => {
      if (!(Number.isInteger(p) && p >= 1 && p < ids.length))
        throw new InvalidArgumentError({
          argument: `batch.positions[${i}][${k}]`,
          message: `must be in 1..${ids.length - 1}, got ${p}`,
        });
    });
  });
  const temperature = batch.temperature ?? 1;
  if (!(Number.isFinite(temperature) && temperature >= 0))
    throw new InvalidArgumentError({
      argument: 'batch.temperature',
      message: `must be >= 0, got ${temperature}`,
    });
  return temperature === 0 ? 1 : temperature;
}

/** Checks the loss's gradient rows match the batch's scored positions. */
export function checkLossOutput(
  result: ReturnType<LossFunction>,
  batch: LogProbBatch,
  provider: string,
): ReturnType<LossFunction> {
  if (
    !result ||
    !Array.isArray(result.gradNewLogProbs) ||
    result.gradNewLogProbs.length !== batch.positions.length
  ) {
    throw new PortOutputError({
      port: 'policy',
      provider,
      field: 'lossFn().gradNewLogProbs',
      message: 'must have one row per sequence of the batch',
    });
  }
  result.gradNewLogProbs.forEach((row, i) => {
    if (!Array.isArray(row) || row.length !== batch.positions[i]!.length) {
      throw new PortOutputError({
        port: 'policy',
        provider,
        field: `lossFn().gradNewLogProbs[${i}]`,
        message: `must have ${batch.positions[i]!.length} entries (one per scored position)`,
      });
    }
  });
  return result;
}

/**
 * A rollout session's row by its id, refused by name: after the session ended, or an id that is
 * not one of its rollouts (every session of an in-process engine refuses them the same way).
 */
export function sessionRowLookup<Row>(
  rows: readonly Row[],
  ended: () => boolean,
): (id: number, argument: string) => Row {
  return (id, argument) => {
    if (ended()) throw new InvalidArgumentError({ argument: 'session', message: 'the session has ended' });
    const row = Number.isInteger(id) ? rows[id] : undefined;
    if (!row)
      throw new InvalidArgumentError({
        argument,
        message: `no rollout ${id} in a session of ${rows.length}`,
      });
    return row;
  };
}

/**
 * A turn asked of a rollout session, refused by name before any row is touched: an aborted signal,
 * a rollout listed twice, a temperature below 0 or a top-p outside (0, 1].
 */
export function checkTurnRequest(rolloutIds: readonly number[], options: GenerateTurnOptions): void {
  if (options.signal?.aborted) throw new AbortedError({ what: 'generateTurn', cause: options.signal.reason });
  if (new Set(rolloutIds).size !== rolloutIds.length)
    throw new InvalidArgumentError({ argument: 'rolloutIds', message: 'lists a rollout twice' });
  if (!(Number.isFinite(options.temperature) && options.temperature >= 0))
    throw new InvalidArgumentError({
      argument: 'temperature',
      message: `must be >= 0, got ${options.temperature}`,
    });
  if (!(options.topP > 0 && options.topP <= 1))
    throw new InvalidArgumentError({ argument: 'topP', message: `must be in (0, 1], got ${options.topP}` });
}

/**
 * What a rollout session's prompts and appended tokens are checked against: the context, the
 * vocabulary, and the context's name in the messages (`the model's`, `the rollouts'`).
 */
export interface RolloutLimits {
  contextLength: number;
  vocabSize: number;
  contextName: string;
}

/** Token ids inside the vocabulary; one outside is refused by its argument's name (`argument(t)`). */
function checkTokenIds(ids: readonly number[], vocabSize: number, argument: (t: number) => string): void {
  ids.forEach((id, t) => {
    if (!(Number.isInteger(id) && id >= 0 && id < vocabSize))
      throw new InvalidArgumentError({
        argument: argument(t),
        message: `token id ${id} is outside the vocabulary`,
      });
  });
}

/**
 * A session's prompts, refused by name before any row is taken: an aborted signal, no prompt, an
 * empty prompt, one that leaves the policy no room to answer, a token outside the vocabulary.
 */
export function checkBeginRequest(
  promptTokenIds: readonly (readonly number[])[],
  callOptions: CallOptions | undefined,
  limits: RolloutLimits,
): void {
  const { contextLength, contextName } = limits;
  if (callOptions?.signal?.aborted)
    throw new AbortedError({ what: 'begin', cause: callOptions.signal.reason });
  if (!Array.isArray(promptTokenIds) || promptTokenIds.length === 0)
    throw new InvalidArgumentError({
      argument: 'promptTokenIds',
      message: 'must be a non-empty array of token id arrays',
    });
  promptTokenIds.forEach((ids, i) => {
    if (ids.length === 0)
      throw new InvalidArgumentError({
        argument: `promptTokenIds[${i}]`,
        message: 'a prompt needs at least one token',
      });
    if (ids.length >= contextLength)
      throw new InvalidArgumentError({
        argument: `promptTokenIds[${i}]`,
        message: `has ${ids.length} tokens; ${contextName} context is ${contextLength} and the policy must have room to answer`,
      });
    checkTokenIds(ids, limits.vocabSize, (t) => `promptTokenIds[${i}][${t}]`);
  });
}

/** Tokens appended to a rollout, refused while it generates a turn, past the context, or outside the vocabulary. */
export function checkAppend(
  row: { busy: boolean; sequence: readonly number[] },
  rolloutId: number,
  tokenIds: readonly number[],
  limits: RolloutLimits,
): void {
  if (row.busy)
    throw new InvalidArgumentError({
      argument: 'rolloutId',
      message: `rollout ${rolloutId} is generating a turn; append after it returns`,
    });
  if (row.sequence.length + tokenIds.length > limits.contextLength)
    throw new InvalidArgumentError({
      argument: 'tokenIds',
      message: `appending ${tokenIds.length} tokens to rollout ${rolloutId} (${row.sequence.length} tokens) exceeds ${limits.contextName} context of ${limits.contextLength}`,
    });
  checkTokenIds(tokenIds, limits.vocabSize, (t) => `tokenIds[${t}]`);
}
