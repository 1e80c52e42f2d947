import { AbortedError, InvalidArgumentError, ProviderCallError, SearcherError } from '../core/errors';
import { maxTokensAt } from '../core/episode/token-budget';
import type { Random } from '../core/random';
import type { CallOptions } from '../ports/common';
import type { GenerateTurnOptions, RolloutSession, TurnOutput } from '../ports/policy-backend';
import type { TokenStep, Tokenizer } from '../ports/types';
import {
  checkAppend,
  checkBeginRequest,
  checkTurnRequest,
  type RolloutLimits,
  sessionRowLookup,
} from './batch-checks';
import { sampleToken } from './sampling';
import { createTurnStop, type TurnStop } from './turn-stop';

/** One rollout as the scheduler sees it; a backend adds its key/value cache. */
export interface ScheduledRow {
  sequence: number[];
  /** Tokens whose keys/values the backend holds; the rest are fed on the next forward. */
  cached: number;
  random: Random;
  /** A turn of this row is being generated. */
  busy: boolean;
}

/** What an in-process policy backend gives the scheduler: its forward and its rows. */
export interface RolloutBackend<Row extends ScheduledRow> {
  /** Names the backend in errors (`ProviderCallError.provider`). */
  provider: string;
  tokenizer: Tokenizer;
  /** Token ids are checked against it. */
  vocabSize: number;
  contextLength: number;
  /** Decode the turns of concurrent sessions in shared forwards; `false`: each session's rows alone. */
  coalesceSessions: boolean;
  /** End-of-sequence ids besides `tokenizer.eosTokenId` (models with several). */
  extraEosTokenIds?: readonly number[];
  /** Before `begin` and `generateTurn`: throws when the backend was disposed. */
  ensureReady(): Promise<void>;
  /** Before each forward (tfjs: activate this policy's backend, which another may have switched). */
  beforeForward?(): Promise<void>;
  /**
   * Feeds every row's uncached tokens (`sequence.slice(cached)`), advances `cached`, and returns
   * log softmax(logits / temperature) over the vocabulary at each row's last token (temperature 0
   * counts as 1). Rows are given in one call so that a backend can batch them.
   */
  forward(rows: Row[], temperature: number): Promise<Float32Array[]>;
  createRow(promptTokenIds: readonly number[], sessionIndex: number, rolloutIndex: number): Row;
  /** Frees a row's cache when its session ends. */
  releaseRow(row: Row): void;
  /** The next session's index (sessions' sampling streams are keyed by it). */
  nextSessionIndex(): number;
}

interface JobRow<Row> {
  row: Row;
  rolloutId: number;
  steps: TokenStep[];
  finish: TurnOutput['finishReason'] | null;
  stop: TurnStop;
}

interface TurnJob<Row> {
  sessionIndex: number;
  /** Frees the job's rows for the next call. */
  settle: () => void;
  rows: JobRow<Row>[];
  options: GenerateTurnOptions;
  resolve: (outputs: TurnOutput[]) => void;
  reject: (error: unknown) => void;
}

export interface RolloutScheduler {
  begin(promptTokenIds: readonly (readonly number[])[], callOptions?: CallOptions): Promise<RolloutSession>;
}

/**
 * Rollout sessions for an in-process policy backend (tfjs, ONNX Runtime): key/value caches live
 * across turns, and turns asked for by concurrent sessions wait in one queue that one pump decodes
 * together, one forward per token step for every row that is generating. Sampling (temperature +
 * top-p from each rollout's seeded stream) and the stop rules are the same for every backend.
 */
export function createRolloutScheduler<Row extends ScheduledRow>(
  backend: RolloutBackend<Row>,
): RolloutScheduler {
  const { tokenizer, contextLength, provider } = backend;
  const limits: RolloutLimits = { contextLength, vocabSize: backend.vocabSize, contextName: "the model's" };
  const jobs: TurnJob<Row>[] = [];
  let pumping = false;

  /** Appends one sampled token to each row of `grouped` and marks the rows that are done. */
  const decodeStep = async (grouped: Array<{ job: TurnJob<Row>; entry: JobRow<Row> }>) => {
    await backend.beforeForward?.();
    // A session that ended (or a turn aborted) while this forward waited has had its turns settled
    // and its caches freed: its rows leave the forward instead of failing the other sessions' turns.
    const group = grouped.filter((e) => jobs.includes(e.job));
    if (group.length === 0) return;
    const temperature = group[0]!.job.options.temperature;
    const logps = await backend.forward(
      group.map((e) => e.entry.row),
      temperature,
    );
    group.forEach(({ job, entry }, index) => {
      // A forward that awaits (ONNX Runtime) can outlive a session that ended meanwhile.
      if (!jobs.includes(job)) return;
      const logp = logps[index]!;
      const row = entry.row;
      const tokenId = sampleToken(logp, { temperature, topP: job.options.topP }, row.random);
      entry.steps.push({
        tokenId,
        tokenText: tokenizer.tokenText(tokenId),
        logProb: logp[tokenId]!,
        position: row.sequence.length,
      });
      row.sequence.push(tokenId);
      entry.finish = entry.stop.afterToken(tokenId, entry.steps.length, row.sequence.length);
    });
  };

  const pump = async () => {
    if (pumping) return;
    pumping = true;
    try {
      while (jobs.length > 0) {
        // Let sessions that are about to ask join this forward.
        await new Promise<void>((resolve) => setImmediate(resolve));
        for (let j = jobs.length - 1; j >= 0; j--) {
          const job = jobs[j]!;
          if (job.options.signal?.aborted) {
            jobs.splice(j, 1);
            job.settle();
            job.reject(new AbortedError({ what: 'generateTurn', cause: job.options.signal.reason }));
          }
        }
        const active = jobs.flatMap((job) =>
          job.rows.filter((entry) => entry.finish === null).map((entry) => ({ job, entry })),
        );
        // Rows feeding one token decode together; rows with a prompt or observation to absorb are
        // fed apart, so that one long chunk does not pad every other row. Without coalescing, each
        // session's rows are fed on their own (results independent of other sessions' timing).
        const forwards = new Map<string, typeof active>();
        for (const item of active) {
          const pending = item.entry.row.sequence.length - item.entry.row.cached === 1 ? 'one' : 'many';
          const key = `${item.job.options.temperature}|${pending}|${backend.coalesceSessions ? '' : item.job.sessionIndex}`;
          forwards.set(key, [...(forwards.get(key) ?? []), item]);
        }
        for (const group of forwards.values()) {
          try {
            await decodeStep(group);
          } catch (error) {
            // Only the turns that were in the failed forward fail; other sessions go on.
            const typed = SearcherError.isInstance(error)
              ? error
              : new ProviderCallError({
                  port: 'policy',
                  provider,
                  message: `forward failed: ${error instanceof Error ? error.message : String(error)}`,
                  isRetryable: false,
                  cause: error,
                });
            for (const job of new Set(group.map((e) => e.job))) {
              const at = jobs.indexOf(job);
              if (at >= 0) jobs.splice(at, 1);
              job.settle();
              job.reject(typed);
            }
          }
        }
        for (let j = jobs.length - 1; j >= 0; j--) {
          const job = jobs[j]!;
          if (job.rows.every((entry) => entry.finish !== null)) {
            jobs.splice(j, 1);
            job.settle();
            job.resolve(
              job.rows.map((entry) => ({
                rolloutId: entry.rolloutId,
                steps: entry.steps,
                finishReason: entry.finish!,
              })),
            );
          }
        }
      }
    } finally {
      pumping = false;
    }
  };

  return {
    async begin(promptTokenIds, callOptions) {
      await backend.ensureReady();
      checkBeginRequest(promptTokenIds, callOptions, limits);
      const sessionIndex = backend.nextSessionIndex();
      const rows = promptTokenIds.map((ids, r) => backend.createRow(ids, sessionIndex, r));
      let ended = false;
      const rowOf = sessionRowLookup(rows, () => ended);
      return {
        size: rows.length,
        async generateTurn(rolloutIds, turnOptions) {
          await backend.ensureReady();
          checkTurnRequest(rolloutIds, turnOptions);
          const jobRows = rolloutIds.map((rolloutId, k): JobRow<Row> => {
            const row = rowOf(rolloutId, 'rolloutIds');
            const maxTokens = Math.min(maxTokensAt(turnOptions, k), contextLength - row.sequence.length);
            const stop = createTurnStop(tokenizer, turnOptions.stopAfter, {
              maxTokens,
              contextLength,
              ...(backend.extraEosTokenIds && { extraEosTokenIds: backend.extraEosTokenIds }),
            });
            return { row, rolloutId, steps: [], finish: maxTokens <= 0 ? 'length' : null, stop };
          });
          const busy = jobRows.find((r) => r.row.busy);
          if (busy)
            throw new InvalidArgumentError({
              argument: 'rolloutIds',
              message: `rollout ${busy.rolloutId} is already generating a turn`,
            });
          for (const r of jobRows) r.row.busy = true;
          const settle = () => {
            for (const r of jobRows) r.row.busy = false;
          };
          const done = new Promise<TurnOutput[]>((resolve, reject) =>
            jobs.push({ sessionIndex, settle, rows: jobRows, options: turnOptions, resolve, reject }),
          );
          void pump();
          return done;
        },
        async append(rolloutId, tokenIds) {
          const row = rowOf(rolloutId, 'rolloutId');
          checkAppend(row, rolloutId, tokenIds, limits);
          // Absorbed lazily: the next generateTurn feeds these tokens in the same forward.
          row.sequence.push(...tokenIds);
        },
        async end() {
          ended = true;
          // Turns still generating in this session end here, without touching other sessions.
          for (let j = jobs.length - 1; j >= 0; j--) {
            const job = jobs[j]!;
            if (job.sessionIndex !== sessionIndex) continue;
            jobs.splice(j, 1);
            job.settle();
            job.reject(
              new InvalidArgumentError({
                argument: 'session',
                message: 'the session ended while a turn was generating',
              }),
            );
          }
          for (const row of rows) backend.releaseRow(row);
        },
      };
    },
  };
}
