import { z } from 'zod';
import { InvalidArgumentError, RewardsMissingError } from '../core/errors';
import { checkPromptRecords } from '../core/prompt-records';
import { resolveRewardWeights } from '../core/reward/combine';
import {
  createRandom,
  hashString,
  permutation,
  RANDOM_STREAMS,
  type Random,
  type RandomState,
} from '../core/random';
import { checkRunId, SUPERSEDABLE_KINDS, type SupersededCounts } from '../core/store/records';
import type { PromptRecord } from '../core/types';
import type { Store } from '../ports/store';
import { checkPortVersion } from '../core/calls/port-version';
import { stepMetrics, type StepMetrics } from './step-metrics';
import { eventRecord, runEvent, type LifecycleEvent } from '../core/events';
import { latestCheckpointKey, readPolicyCheckpoint, writePolicyCheckpoint } from './checkpoints';
import { applyRetention, CHECKPOINT_METRICS, type Retention } from './retention';
import type { ScoredBatch, Searcher } from '../searcher';
import { parseSettings, positiveInt } from '../provider-utils/settings';

/**
 * The trainer's settings as a zod schema: steps, batch size, checkpoints, resume mode and
 * retention.
 */
export const trainerSettingsSchema = z
  .object({
    runId: z.string().min(1),
    /** Train until this many steps are done (a resumed run counts the steps before it). */
    steps: positiveInt(),
    /** Prompts per step (B); each gets `rl.nAgent` rollouts. */
    batchSize: positiveInt(),
    /** Checkpoint every this many steps (and always after the last, and before the first when the run has no checkpoint of its own). */
    saveFreq: positiveInt().default(10),
    /** `auto`: continue from this run's latest checkpoint if any; `disable`: start fresh; else a checkpoint path (`checkpoints/step-00000010` or `otherRun/checkpoints/step-00000010`). */
    resumeMode: z.string().min(1).default('auto'),
    seed: z.number().int().default(0),
    /** Checkpoints kept: the latest this many (`null`: every one), with the best by `keepBestBy`; the others' files are deleted. */
    keepLast: positiveInt().nullable().default(2),
    /** Also keep the checkpoint whose weights scored best on this step metric (the next step's rollouts; `null`: none). */
    keepBestBy: z.enum(CHECKPOINT_METRICS).nullable().default('rewardMean'),
    /** Shuffle the prompts each epoch (seeded). */
    shuffle: z.boolean().default(true),
    /**
     * Stop with a RewardsMissingError, naming the causes, when at least this share of a step's
     * rewards could not be computed (a missing key, a dead judge): 1 stops only when all are missing.
     */
    haltAtMissingShare: z.number().gt(0).max(1).default(1),
  })
  .strict();

/** The trainer's settings as written (`trainerSettingsSchema`). */
export type TrainerSettings = z.input<typeof trainerSettingsSchema>;

/** Where the next step's prompts start: an epoch of the seeded order and an index into it. */
export interface DataCursor {
  epoch: number;
  index: number;
}

/**
 * What `Trainer.run` did: the steps it ran, the checkpoint it continued from, and what retention
 * kept.
 */
export interface TrainerRunResult {
  /** Metrics of the steps this call ran. */
  steps: StepMetrics[];
  /** The checkpoint this call continued from, if any. */
  resumedFrom: { key: string; step: number } | null;
  /** Checkpoints written by this call. */
  checkpoints: string[];
  /** The checkpoints kept after the last one written (src/run/retention.ts), or null when none was written. */
  retention: Retention | null;
}

/**
 * The RL loop over a Searcher: each step samples prompts, collects scored rollouts and updates;
 * checkpoints and resumes. Made by `createTrainer`.
 */
export interface Trainer {
  /** Steps completed (including those before a resume, once `run` has loaded the checkpoint). */
  readonly step: number;
  readonly cursor: DataCursor;
  /**
   * Loads the checkpoint that `resumeMode` names, then runs steps until `settings.steps` are done:
   * sample B prompts, n_agent rollouts each, rewards, advantages, ppoEpochs x minibatch updates;
   * stores each step's metrics and checkpoints every `saveFreq` steps.
   */
  run(options?: {
    signal?: AbortSignal;
    onStep?: (metrics: StepMetrics, batch: ScoredBatch) => void | Promise<void>;
  }): Promise<TrainerRunResult>;
  /** The prompts the next step will use (advances nothing). */
  peekBatch(): PromptRecord[];
}

interface TrainerCheckpointState {
  format: 'searcher-rl.trainer-checkpoint.v1';
  step: number;
  cursor: DataCursor;
  random: RandomState;
  seed: number;
  batchSize: number;
  shuffle: boolean;
  dataset: { size: number; fingerprint: string };
  policy: { format: string; metadata: Record<string, unknown>; blobs: string[] };
}

// What a resume reads back from a checkpoint's state (it is written by this file, read as untrusted JSON).
const count = z.number().int().min(0);
const word = count.lt(2 ** 32);
const savedRandomSchema = z.tuple([word, word, word, word]);
const savedPlaceSchema = z.object({ step: count, cursor: z.object({ epoch: count, index: count }) });
const savedDataSchema = z.object({ size: z.number(), fingerprint: z.string() });

/** FNV-1a over the prompt uids: a resumed run must see the same data in the same order. */
function fingerprint(prompts: readonly PromptRecord[]): string {
  return hashString(prompts.map((p) => p.uid).join('\u0000'))
    .toString(16)
    .padStart(8, '0');
}

/**
 * Per record kind and step, how many records a run already holds for the steps after `step`:
 * those an interrupted attempt left, which the steps run again supersede. `null` when none.
 */
async function staleRecordCounts(
  store: Store,
  runId: string,
  step: number,
): Promise<SupersededCounts | null> {
  const counts: SupersededCounts = {};
  for (const kind of SUPERSEDABLE_KINDS) {
    for (const record of await store.doQuery({ kind, runId })) {
      if (record.step <= step) continue;
      const perStep = (counts[kind] ??= {});
      perStep[record.step] = (perStep[record.step] ?? 0) + 1;
    }
  }
  return Object.keys(counts).length === 0 ? null : counts;
}

/**
 * The GRPO/GSPO training loop over a Searcher (its policy must be trainable to learn anything),
 * with checkpoints in a Store: the policy's blobs, the data cursor and the RNG state, committed by
 * a `checkpoint` record written last. A run stopped and resumed continues at the step after its
 * last checkpoint and draws exactly what the uninterrupted run would have.
 */
export function createTrainer(args: {
  searcher: Searcher;
  store: Store;
  prompts: readonly PromptRecord[];
  settings: TrainerSettings;
}): Trainer {
  const settings = parseSettings('createTrainer', trainerSettingsSchema, args.settings);
  checkRunId(settings.runId, 'settings.runId');
  const { searcher, store } = args;
  checkPortVersion('store', store);
  const prompts = [...args.prompts];
  if (prompts.length === 0)
    throw new InvalidArgumentError({ argument: 'prompts', message: 'needs at least one prompt' });
  const rewardConfig = searcher.config.reward;
  checkPromptRecords(prompts, {
    needsReference:
      rewardConfig.scheme === 'search-r1' || resolveRewardWeights(rewardConfig.weights).judge !== 0,
  });
  const policy = searcher.ports.policy;
  const datasetFingerprint = fingerprint(prompts);

  let step = 0;
  let cursor: DataCursor = { epoch: 0, index: 0 };
  const random: Random = createRandom(settings.seed, RANDOM_STREAMS.trainerUpdates);
  const orders = new Map<number, number[]>();
  const orderOf = (epoch: number) => {
    let order = orders.get(epoch);
    if (!order) {
      order = settings.shuffle
        ? permutation(prompts.length, createRandom(settings.seed, RANDOM_STREAMS.epochOrder, epoch))
        : prompts.map((_, i) => i);
      orders.clear();
      orders.set(epoch, order);
    }
    return order;
  };
  const take = (from: DataCursor): { batch: PromptRecord[]; next: DataCursor } => {
    const batch: PromptRecord[] = [];
    let { epoch, index } = from;
    while (batch.length < settings.batchSize) {
      if (index >= prompts.length) {
        epoch++;
        index = 0;
      }
      batch.push(prompts[orderOf(epoch)[index]!]!);
      index++;
    }
    return { batch, next: { epoch, index } };
  };

  let retention: Retention | null = null;
  const saveCheckpoint = async (signal?: AbortSignal): Promise<string> => {
    const checkpoint = await policy.save(signal ? { signal } : {});
    const state: Omit<TrainerCheckpointState, 'policy'> = {
      format: 'searcher-rl.trainer-checkpoint.v1',
      step,
      cursor,
      random: random.state(),
      seed: settings.seed,
      batchSize: settings.batchSize,
      shuffle: settings.shuffle,
      dataset: { size: prompts.length, fingerprint: datasetFingerprint },
    };
    const key = await writePolicyCheckpoint(store, settings.runId, step, checkpoint, { ...state }, signal);
    retention = await applyRetention(store, settings.runId, settings, signal);
    return key;
  };

  const loadCheckpoint = async (runId: string, key: string): Promise<void> => {
    const read = await readPolicyCheckpoint(store, runId, key);
    const state = read.state;
    if (state.format !== 'searcher-rl.trainer-checkpoint.v1')
      throw new InvalidArgumentError({
        argument: 'checkpoint.format',
        message: `expected 'searcher-rl.trainer-checkpoint.v1', got '${String(state.format)}'`,
      });
    const mismatch = (field: string, theirs: unknown, ours: unknown) => {
      throw new InvalidArgumentError({
        argument: `settings.${field}`,
        message: `the checkpoint at '${runId}/${key}' was made with ${JSON.stringify(theirs)}, this run has ${JSON.stringify(ours)}; an exact resume needs the same value (or use resumeMode 'disable')`,
      });
    };
    if (state.batchSize !== settings.batchSize) mismatch('batchSize', state.batchSize, settings.batchSize);
    if (state.seed !== settings.seed) mismatch('seed', state.seed, settings.seed);
    if (state.shuffle !== settings.shuffle) mismatch('shuffle', state.shuffle, settings.shuffle);
    const dataset = savedDataSchema.safeParse(state.dataset).data;
    if (dataset?.size !== prompts.length || dataset.fingerprint !== datasetFingerprint)
      mismatch('prompts', state.dataset, { size: prompts.length, fingerprint: datasetFingerprint });
    const savedRandom = savedRandomSchema.safeParse(state.random);
    if (!savedRandom.success) {
      throw new InvalidArgumentError({
        argument: 'checkpoint.random',
        message: `the checkpoint at '${runId}/${key}' has no valid RNG state`,
      });
    }
    const place = savedPlaceSchema.safeParse(state);
    if (!place.success)
      throw new InvalidArgumentError({
        argument: 'checkpoint.cursor',
        message: `the checkpoint at '${runId}/${key}' has no valid step and data cursor`,
      });
    await policy.load(read.checkpoint);
    step = place.data.step;
    cursor = place.data.cursor;
    random.restore(savedRandom.data);
  };

  const resolveResume = async (): Promise<{ runId: string; key: string } | null> => {
    const mode = settings.resumeMode;
    if (mode === 'disable') return null;
    if (mode === 'auto') {
      const key = await latestCheckpointKey(store, settings.runId);
      return key === null ? null : { runId: settings.runId, key };
    }
    const parts = mode.split('/').filter((p) => p.length > 0);
    const at = parts.indexOf('checkpoints');
    if (at < 0 || at > 1 || parts.length !== at + 2) {
      throw new InvalidArgumentError({
        argument: 'settings.resumeMode',
        message: `must be 'auto', 'disable' or a checkpoint path like 'checkpoints/step-00000010' or 'otherRun/checkpoints/step-00000010', got '${mode}'`,
      });
    }
    const runId = at === 1 ? parts[0]! : settings.runId;
    checkRunId(runId, 'settings.resumeMode');
    return { runId, key: parts.slice(at).join('/') };
  };

  let resumed = false;
  // A run() that failed mid-step leaves the policy part-updated and the RNG advanced: the next
  // run() must not take that step again on top of it.
  let failedMidStep = false;
  return {
    get step() {
      return step;
    },
    get cursor() {
      return { ...cursor };
    },
    peekBatch: () => take(cursor).batch,
    async run(options = {}) {
      if (failedMidStep) {
        throw new InvalidArgumentError({
          argument: 'trainer',
          message: `an earlier run() failed during step ${step + 1}, after the policy may have changed; create a new trainer (resumeMode 'auto') to continue from the last checkpoint`,
        });
      }
      const result: TrainerRunResult = { steps: [], resumedFrom: null, checkpoints: [], retention: null };
      if (!resumed) {
        resumed = true;
        const signalOption = options.signal ? { signal: options.signal } : {};
        const from = await resolveResume();
        if (from) {
          await loadCheckpoint(from.runId, from.key);
          result.resumedFrom = { key: `${from.runId}/${from.key}`, step };
        }
        // Records of steps after the starting point are left by an interrupted attempt: the event
        // counts them per step, so readers (supersededRecords) can drop them; they are run again.
        const superseded = await staleRecordCounts(store, settings.runId, step);
        if (result.resumedFrom || superseded) {
          const data: LifecycleEvent = result.resumedFrom
            ? { type: 'resume', from: result.resumedFrom.key, nextStep: step + 1 }
            : { type: 'restart', nextStep: step + 1 };
          await store.doAppend(
            [eventRecord(settings.runId, step, { ...data, ...(superseded && { superseded }) })],
            signalOption,
          );
        }
        // A run starting without a checkpoint of its own saves one first: the policy's state here
        // (its sampling-session counter above all, advanced by whatever ran before, such as an
        // evaluation) is what a restart before the first periodic checkpoint must continue from.
        if (!from || from.runId !== settings.runId)
          result.checkpoints.push(await saveCheckpoint(options.signal));
      }
      const signalOption = options.signal ? { signal: options.signal } : {};
      await store.doAppend(
        [
          eventRecord(
            settings.runId,
            step,
            runEvent('run.start', settings.runId, step, {
              steps: settings.steps,
              batchSize: settings.batchSize,
              prompts: prompts.length,
              seed: settings.seed,
            }),
          ),
        ],
        signalOption,
      );
      while (step < settings.steps) {
        const stepNumber = step + 1;
        failedMidStep = true;
        const { batch: stepPrompts, next } = take(cursor);
        await store.doAppend(
          [
            eventRecord(
              settings.runId,
              stepNumber,
              runEvent('step.start', settings.runId, stepNumber, { prompts: stepPrompts.map((p) => p.uid) }),
            ),
          ],
          signalOption,
        );
        const epoch = cursor.index >= prompts.length ? cursor.epoch + 1 : cursor.epoch;
        const startedAt = performance.now();
        const scored = await searcher.collect(stepPrompts, {
          step: stepNumber,
          runId: settings.runId,
          ...(options.signal && { signal: options.signal }),
        });
        const rolloutMs = performance.now() - startedAt;
        const total = scored.pipeline.samplesTotal;
        if (total > 0 && scored.missingRewards / total >= settings.haltAtMissingShare) {
          const examples = scored.episodes
            .flatMap((e) =>
              e.trajectory.rewardDetail?.status === 'missing'
                ? [e.trajectory.rewardDetail.cause.message]
                : [],
            )
            .concat(scored.lostSamples.map((s) => s.cause.message));
          const halt = new RewardsMissingError({
            step: stepNumber,
            missing: scored.missingRewards,
            total,
            causes: scored.pipeline.failures,
            examples: [...new Set(examples)].slice(0, 2),
          });
          // The step's trajectories and rewards are already stored; this event says why it stops there.
          await store.doAppend(
            [
              eventRecord(settings.runId, stepNumber, {
                type: 'halt',
                reason: halt.message,
                causes: halt.causes,
              }),
            ],
            options.signal ? { signal: options.signal } : {},
          );
          throw halt;
        }
        const updateStartedAt = performance.now();
        const update = await searcher.update(scored, {
          random,
          ...(options.signal && { signal: options.signal }),
        });
        const updateMs = performance.now() - updateStartedAt;
        const metrics = stepMetrics(
          stepNumber,
          epoch,
          stepPrompts.length,
          scored,
          update,
          rolloutMs,
          updateMs,
        );
        step = stepNumber;
        cursor = next;
        await store.doAppend(
          [
            { kind: 'metric', runId: settings.runId, step, time: Date.now(), data: metrics },
            eventRecord(
              settings.runId,
              step,
              runEvent('step.end', settings.runId, step, {
                rolloutMs,
                updateMs,
                rewardMean: metrics.rewardMean,
                successRate: metrics.successRate,
              }),
            ),
          ],
          signalOption,
        );
        result.steps.push(metrics);
        failedMidStep = false;
        await options.onStep?.(metrics, scored);
        if (step % settings.saveFreq === 0 || step === settings.steps) {
          result.checkpoints.push(await saveCheckpoint(options.signal));
        }
      }
      result.retention = retention;
      return result;
    },
  };
}
