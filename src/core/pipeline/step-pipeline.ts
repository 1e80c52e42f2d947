import { classifyFailure } from '../calls/failures';
import { AbortScope } from '../concurrency/abort-scope';
import { BoundedQueue } from '../concurrency/bounded-queue';
import { createSystemClock } from '../concurrency/clock';
import { Semaphore } from '../concurrency/semaphore';
import { AbortedError, InvalidArgumentError } from '../errors';
import { rewardValue, type RewardFailure, type RewardOutcome, type RewardWeights } from '../reward/combine';
import { applyGroupRule } from '../rl/group-rule';
import {
  DEFAULT_PIPELINE_LIMITS,
  DEFAULT_PIPELINE_DEADLINES,
  PIPELINE_MODES,
  DEFAULT_PIPELINE_MODE,
  type PipelineLimits,
  type PipelineDeadlines,
  type StepPipelineOptions,
  type GroupResult,
  type PipelineMetrics,
  type StepResult,
} from './types';

const NO_WEIGHTS: RewardWeights = { judge: 0, ndcg: 0, format: 0 };

function missing(failure: RewardFailure): RewardOutcome {
  return { status: 'missing', cause: failure, components: {}, weights: NO_WEIGHTS };
}

function positiveInteger(name: string, value: number): void {
  if (!(Number.isInteger(value) && value >= 1))
    throw new InvalidArgumentError({
      argument: name,
      message: `must be an integer >= 1, got ${String(value)}`,
    });
}

function positiveMs(name: string, value: number | null, nullable: boolean): void {
  if (value === null && nullable) return;
  if (!(typeof value === 'number' && value > 0))
    throw new InvalidArgumentError({
      argument: name,
      message: `must be a number of milliseconds > 0${nullable ? ' or null' : ''}, got ${String(value)}`,
    });
}

/**
 * Runs one step's groups through rollout, terminal generation, judging and reward assembly.
 *
 * Streaming: a group's terminal generation and judging start as soon as all its rollouts end,
 * while other groups are still generating; finished groups wait in a bounded buffer, and a
 * rollout slot is held until its group is buffered, so memory stays bounded when the judge is
 * slower than generation. Synchronous and staged modes wait for every rollout first (see
 * `mode`), under the same caps, for comparison.
 *
 * Failures and deadlines never lose a sample: it is returned with a missing reward and its cause,
 * and its group's advantages are computed from the rest. Cancelling (the signal) aborts every
 * call in flight; the pipeline rejects with AbortedError once all of them have settled.
 */
export async function runStepPipeline<G, S>(options: StepPipelineOptions<G, S>): Promise<StepResult<S>> {
  const { groups, stages } = options;
  if (!Array.isArray(groups))
    throw new InvalidArgumentError({ argument: 'groups', message: 'expected an array' });
  const mode = options.mode ?? DEFAULT_PIPELINE_MODE;
  if (!PIPELINE_MODES.includes(mode))
    throw new InvalidArgumentError({
      argument: 'mode',
      message: `must be one of ${PIPELINE_MODES.join(', ')}, got ${String(mode)}`,
    });
  const limits: PipelineLimits = { ...DEFAULT_PIPELINE_LIMITS, ...options.limits };
  for (const key of Object.keys(DEFAULT_PIPELINE_LIMITS) as Array<keyof PipelineLimits>)
    positiveInteger(`limits.${key}`, limits[key]);
  const deadlines: PipelineDeadlines = { ...DEFAULT_PIPELINE_DEADLINES, ...options.deadlines };
  positiveMs('deadlines.totalTimeoutMs', deadlines.totalTimeoutMs, false);
  positiveMs('deadlines.rewardTimeoutMs', deadlines.rewardTimeoutMs, false);
  positiveMs('deadlines.stepTimeoutMs', deadlines.stepTimeoutMs, true);
  const clock = options.clock ?? createSystemClock();
  const sizes = groups.map((group, i) => {
    const size = stages.groupSize(group);
    positiveInteger(`groups[${i}] size`, size);
    return size;
  });

  const start = clock.now();
  // Every scope is disposed at the end, whatever happened, so no deadline timer outlives the step.
  const scopes: AbortScope[] = [];
  const scope = (parents: AbortSignal[], deadlineMs: number | null, label: string) => {
    const created = new AbortScope(clock, parents, { ms: deadlineMs, label });
    scopes.push(created);
    return created;
  };
  const cancel = scope(options.signal ? [options.signal] : [], null, 'step');
  const stepDeadline = scope(
    [cancel.signal],
    deadlines.stepTimeoutMs,
    `step deadline of ${deadlines.stepTimeoutMs} ms`,
  );
  const rolloutSlots = new Semaphore(limits.rollout, 'rollout');
  const generateSlots = new Semaphore(limits.generate, 'generate');
  const scoreSlots = new Semaphore(limits.score, 'score');
  const rewardGroupSlots = new Semaphore(limits.rewardGroups, 'rewardGroups');
  const buffer = new BoundedQueue<RolledOutGroup<S>>(limits.bufferedGroups, 'bufferedGroups');
  const results = new Array<GroupResult<S>>(groups.length);
  const failures: Record<string, number> = {};
  const callbackErrors: StepResult<S>['callbackErrors'] = [];

  const checkCancelled = () => {
    if (cancel.signal.aborted) throw new AbortedError({ what: 'step', cause: cancel.signal.reason });
  };

  const rollOut = async (groupIndex: number): Promise<RolledOutGroup<S>> => {
    const size = sizes[groupIndex]!;
    const samples: Array<S | undefined> = new Array(size).fill(undefined);
    const outcomes: Array<RewardOutcome | undefined> = new Array(size).fill(undefined);
    const fillUnfinished = (failure: RewardFailure) => {
      samples.forEach((sample, i) => {
        if (sample === undefined && outcomes[i] === undefined) outcomes[i] = missing(failure);
      });
    };
    const waiting = scope([stepDeadline.signal], null, 'waiting for a rollout slot');
    try {
      await rolloutSlots.acquire(waiting.signal);
    } catch {
      checkCancelled();
      fillUnfinished({
        stage: 'episode',
        kind: 'deadline',
        message: `${stepDeadline.firedDeadline ?? 'step deadline'} passed before the rollout started`,
      });
      return {
        groupIndex,
        samples,
        outcomes,
        prompt: scope([cancel.signal], null, 'prompt'),
        partial: false,
        release: () => undefined,
      };
    } finally {
      waiting.dispose();
    }
    // The prompt deadline runs from the rollout's start, not from the wait for a rollout slot.
    const prompt = scope(
      [cancel.signal],
      deadlines.totalTimeoutMs,
      `prompt deadline of ${deadlines.totalTimeoutMs} ms`,
    );
    const rolloutScope = scope([prompt.signal, stepDeadline.signal], null, 'rollout');
    let partial = false;
    try {
      await stages.rollout(groups[groupIndex]!, {
        signal: rolloutScope.signal,
        emit: (index, sample) => {
          if (!(Number.isInteger(index) && index >= 0 && index < size))
            throw new InvalidArgumentError({
              argument: 'emit index',
              message: `must be in [0, ${size}), got ${index}`,
            });
          samples[index] = sample;
        },
      });
      const unfinished = samples.filter((s) => s === undefined).length;
      if (unfinished > 0)
        fillUnfinished({
          stage: 'episode',
          kind: 'error',
          message: `the rollout stage ended without ${unfinished} of ${size} samples`,
        });
    } catch (error) {
      checkCancelled();
      if (prompt.firedDeadline)
        fillUnfinished({ stage: 'episode', kind: 'deadline', message: prompt.firedDeadline });
      else if (stepDeadline.firedDeadline) {
        partial = samples.some((s) => s !== undefined);
        fillUnfinished({
          stage: 'episode',
          kind: 'deadline',
          message: `${stepDeadline.firedDeadline}; finished members were submitted`,
        });
      } else fillUnfinished(classifyFailure('episode', error));
    } finally {
      rolloutScope.dispose();
    }
    return { groupIndex, samples, outcomes, prompt, partial, release: () => rolloutSlots.release() };
  };

  /**
   * One reward call under its stage's cap. The reward deadline starts once the call has its slot
   * (time queued behind the pipeline's own caps is not the provider's); a miss is recorded at the
   * stage that missed it.
   */
  const rewardCall = async (
    group: RolledOutGroup<S>,
    index: number,
    stage: 'generator' | 'judge',
    slots: Semaphore,
    run: (signal: AbortSignal) => Promise<void>,
  ) => {
    if (group.outcomes[index] !== undefined) return;
    try {
      await slots.acquire(group.prompt.signal);
    } catch {
      checkCancelled();
      group.outcomes[index] = missing({
        stage,
        kind: 'deadline',
        message: group.prompt.firedDeadline ?? 'prompt deadline',
      });
      return;
    }
    const call = scope(
      [group.prompt.signal],
      deadlines.rewardTimeoutMs,
      `reward deadline of ${deadlines.rewardTimeoutMs} ms`,
    );
    try {
      await run(call.signal);
    } catch (error) {
      checkCancelled();
      const fired = call.firedDeadline ?? group.prompt.firedDeadline;
      group.outcomes[index] = missing(
        fired ? { stage, kind: 'deadline', message: fired } : classifyFailure(stage, error),
      );
    } finally {
      call.dispose();
      slots.release();
    }
  };

  const generateOne = (group: RolledOutGroup<S>, index: number) =>
    stages.generate
      ? rewardCall(group, index, 'generator', generateSlots, (signal) =>
          stages.generate!(group.samples[index]!, { signal }),
        )
      : Promise.resolve();

  const scoreOne = (group: RolledOutGroup<S>, index: number) =>
    rewardCall(group, index, 'judge', scoreSlots, async (signal) => {
      group.outcomes[index] = await stages.score(group.samples[index]!, { signal });
    });

  const assemble = async (group: RolledOutGroup<S>) => {
    group.prompt.dispose();
    checkCancelled();
    const outcomes = group.samples.map(
      (_sample, index) =>
        group.outcomes[index] ??
        missing({ stage: 'judge', kind: 'error', message: 'no reward was produced' }),
    );
    for (const reward of outcomes) {
      if (reward.status === 'missing')
        failures[`${reward.cause.stage}:${reward.cause.kind}`] =
          (failures[`${reward.cause.stage}:${reward.cause.kind}`] ?? 0) + 1;
    }
    const rewards = outcomes.map(rewardValue);
    const rule = applyGroupRule(rewards, options.advantage);
    const samples = group.samples.map((sample, index) => {
      const reward = outcomes[index]!;
      const finished =
        sample === undefined
          ? null
          : stages.complete
            ? stages.complete(sample, reward, rule.advantages[index]!)
            : sample;
      return { index, sample: finished, reward };
    });
    const result: GroupResult<S> = {
      groupIndex: group.groupIndex,
      samples,
      rewards,
      status: rule.status,
      advantages: rule.advantages,
      partial: group.partial,
      completedAtMs: clock.now() - start,
    };
    results[group.groupIndex] = result;
    try {
      await options.onGroup?.(result);
    } catch (error) {
      callbackErrors.push({ groupIndex: group.groupIndex, error });
    }
  };

  const submitted = (group: RolledOutGroup<S>) =>
    group.samples.flatMap((sample, index) =>
      sample !== undefined && group.outcomes[index] === undefined ? [index] : [],
    );

  /** Generation then judging of every submitted sample of a group; assembled when all have settled. */
  const rewardGroup = async (group: RolledOutGroup<S>) => {
    await settleAll(
      submitted(group).map(async (index) => {
        await generateOne(group, index);
        await scoreOne(group, index);
      }),
    );
    await assemble(group);
  };

  try {
    if (mode === 'streaming') {
      const producer = (async () => {
        try {
          await settleAll(
            groups.map(async (_group, groupIndex) => {
              const rolled = await rollOut(groupIndex);
              const pushing = scope([cancel.signal], null, 'buffering');
              try {
                // The rollout slot is held until the group is buffered: backpressure on new rollouts.
                await buffer.push(rolled, pushing.signal);
              } finally {
                pushing.dispose();
                rolled.release();
              }
            }),
          );
        } finally {
          buffer.close();
        }
      })();
      const consumer = (async () => {
        const inFlight: Promise<void>[] = [];
        let failure: { error: unknown } | null = null;
        try {
          for (;;) {
            const group = await buffer.shift(cancel.signal);
            if (group === undefined) break;
            await rewardGroupSlots.acquire(cancel.signal);
            // Each task's failure is caught as it happens (no unhandled rejection while we wait).
            inFlight.push(
              rewardGroup(group)
                .then(
                  () => undefined,
                  (error: unknown) => {
                    failure ??= { error };
                  },
                )
                .finally(() => rewardGroupSlots.release()),
            );
          }
        } finally {
          await Promise.all(inFlight);
        }
        if (failure !== null) throw (failure as { error: unknown }).error;
      })();
      await settleAll([producer, consumer]);
    } else {
      const rolled = await settleAll(
        groups.map(async (_group, groupIndex) => {
          const group = await rollOut(groupIndex);
          group.release();
          return group;
        }),
      );
      if (mode === 'synchronous') {
        await settleAll(rolled.map((group) => rewardGroupSlots.use(() => rewardGroup(group), cancel.signal)));
      } else {
        // The seed's loop: every terminal generation, then every judgement.
        await settleAll(rolled.flatMap((group) => submitted(group).map((i) => generateOne(group, i))));
        await settleAll(rolled.flatMap((group) => submitted(group).map((i) => scoreOne(group, i))));
        for (const group of rolled) await assemble(group);
      }
    }
    checkCancelled();
  } finally {
    for (const created of scopes) created.dispose();
  }

  const all = results.flatMap((r) => r.samples);
  const metrics: PipelineMetrics = {
    mode,
    stepTimeMs: clock.now() - start,
    samplesTotal: all.length,
    samplesScored: all.filter((s) => s.reward.status === 'ok').length,
    samplesMissing: all.filter((s) => s.reward.status === 'missing').length,
    promptsTotal: results.length,
    promptsScored: results.filter((r) => r.rewards.some((x) => x !== null)).length,
    promptsUsable: results.filter((r) => r.status === 'usable').length,
    partialGroups: results.filter((r) => r.partial).length,
    failures,
    peak: {
      rollout: rolloutSlots.peak,
      generate: generateSlots.peak,
      score: scoreSlots.peak,
      bufferedGroups: buffer.peak,
      rewardGroups: rewardGroupSlots.peak,
    },
    limits,
  };
  return { groups: results, metrics, callbackErrors };
}

interface RolledOutGroup<S> {
  groupIndex: number;
  samples: Array<S | undefined>;
  outcomes: Array<RewardOutcome | undefined>;
  prompt: AbortScope;
  partial: boolean;
  release: () => void;
}

/** Like Promise.all, but waits for every promise to settle before rethrowing the first failure. */
async function settleAll<T>(promises: Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}
