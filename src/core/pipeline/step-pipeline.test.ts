import { describe, expect, it } from 'vitest';
import { AbortedError, InvalidArgumentError, ProviderCallError } from '../errors';
import type { RewardOutcome } from '../reward/combine';
import { groupAdvantages } from '../rl/advantages';

/** A usable group's advantages as the pipeline states them: a missing reward takes no part (`null`). */
const inUpdate = (rewards: Array<number | null>) =>
  groupAdvantages(rewards).map((a, i) => (rewards[i] === null ? null : a));
import { createVirtualClock, type VirtualClock } from '../../testing/virtual-clock';
import { runStepPipeline } from './step-pipeline';
import type { PipelineStages, StepPipelineOptions } from './types';

/** A simulated group: per-rollout durations (ms), generation and judge latencies, rewards. */
interface SimGroup {
  name: string;
  rollout: number[];
  generate: number[];
  judge: number[];
  reward: number[];
  judgeError?: (index: number) => Error | undefined;
}
interface SimSample {
  group: SimGroup;
  index: number;
}

interface Log {
  events: string[];
  aborted: string[];
  inFlight: number;
  /** Calls in flight per kind (rollout, generate, judge) and their peaks, counted inside the stages. */
  byKind?: Record<string, { now: number; peak: number }>;
  /** Extra time a call takes to wind down after an abort. */
  windDownMs?: (label: string) => number;
}

const ok = (value: number): RewardOutcome => ({
  status: 'ok',
  value,
  components: { formatPassed: true, judgeScore: value, ndcg: 0 },
  weights: { judge: 1, ndcg: 0, format: 0 },
});

function simStages(clock: VirtualClock, log: Log): PipelineStages<SimGroup, SimSample> {
  const timed = async (label: string, ms: number, signal: AbortSignal) => {
    const kind = label.split(' ')[0]!;
    log.byKind ??= {};
    const counter = (log.byKind[kind] ??= { now: 0, peak: 0 });
    log.inFlight++;
    counter.now++;
    counter.peak = Math.max(counter.peak, counter.now);
    try {
      await clock.sleep(ms, signal);
    } catch (error) {
      log.aborted.push(label);
      const windDown = log.windDownMs?.(label) ?? 0;
      if (windDown > 0) await clock.sleep(windDown);
      throw error;
    } finally {
      log.inFlight--;
      counter.now--;
    }
  };
  return {
    groupSize: (g) => g.rollout.length,
    async rollout(g, { signal, emit }) {
      log.events.push(`${clock.now()} rollout-start ${g.name}`);
      await Promise.all(
        g.rollout.map(async (ms, index) => {
          await timed(`rollout ${g.name}#${index}`, ms, signal);
          emit(index, { group: g, index });
        }),
      );
      log.events.push(`${clock.now()} rollout-end ${g.name}`);
    },
    async generate(s, { signal }) {
      await timed(`generate ${s.group.name}#${s.index}`, s.group.generate[s.index]!, signal);
    },
    async score(s, { signal }) {
      await timed(`judge ${s.group.name}#${s.index}`, s.group.judge[s.index]!, signal);
      const error = s.group.judgeError?.(s.index);
      if (error) throw error;
      log.events.push(`${clock.now()} judged ${s.group.name}#${s.index}`);
      return ok(s.group.reward[s.index]!);
    },
  };
}

const group = (name: string, rollout: number, judge: number, rewards = [1, 0]): SimGroup => ({
  name,
  rollout: rewards.map(() => rollout),
  generate: rewards.map(() => 10),
  judge: rewards.map(() => judge),
  reward: rewards,
});

function setup(groups: SimGroup[], options: Partial<StepPipelineOptions<SimGroup, SimSample>> = {}) {
  const clock = createVirtualClock();
  const log: Log = { events: [], aborted: [], inFlight: 0 };
  const completions: string[] = [];
  const run = () =>
    clock.run(
      runStepPipeline({
        groups,
        stages: simStages(clock, log),
        clock,
        onGroup: (r) => {
          completions.push(`${groups[r.groupIndex]!.name}@${r.completedAtMs}`);
        },
        ...options,
      }),
    );
  return { clock, log, completions, run };
}

describe('runStepPipeline: streaming', () => {
  it("starts a group's rewards as soon as its rollouts end, while later groups still generate", async () => {
    const { run, completions, log } = setup([group('a', 100, 50), group('b', 100, 50), group('c', 100, 50)], {
      limits: { rollout: 1 },
    });
    const result = await run();
    // a: rollout 0-100, generate 100-110, judge 110-160; b: rollout 100-200 ...
    expect(completions).toEqual(['a@160', 'b@260', 'c@360']);
    expect(log.events).toContain('160 judged a#0');
    expect(log.events.indexOf('160 judged a#0')).toBeLessThan(log.events.indexOf('200 rollout-end b'));
    expect(result.metrics.stepTimeMs).toBe(360);
    expect(result.metrics.peak.rollout).toBe(1);
  });

  it('returns groups in input order whatever the completion order', async () => {
    const { run, completions } = setup([group('slow', 300, 10), group('fast', 10, 10)], {
      limits: { rollout: 2 },
    });
    const result = await run();
    expect(completions.map((c) => c.split('@')[0])).toEqual(['fast', 'slow']);
    expect(result.groups.map((g) => g.groupIndex)).toEqual([0, 1]);
  });

  it('matches the synchronous mode in rewards and advantages, and is faster', async () => {
    // The slowest judge is on the first group: streaming hides it behind the later rollouts.
    const groups = [
      group('a', 100, 300, [1, 0, 0.5]),
      group('b', 150, 20, [0, 0, 1]),
      group('c', 80, 20, [0.2, 0.4, 0.9]),
    ];
    const streaming = await setup(groups, { limits: { rollout: 1 } }).run();
    const sync = await setup(groups, { limits: { rollout: 1 }, mode: 'synchronous' }).run();
    expect(streaming.groups.map((g) => g.advantages)).toEqual(sync.groups.map((g) => g.advantages));
    expect(streaming.groups[0]!.advantages).toEqual(groupAdvantages([1, 0, 0.5]));
    // Synchronous: rollouts end at 330, generation at 340, judging at 640.
    expect(sync.metrics.stepTimeMs).toBe(640);
    // Streaming: a is judged 110-410 while b and c roll out; c is done at 360.
    expect(streaming.metrics.stepTimeMs).toBe(410);
  });
});

describe('runStepPipeline: synchronous and staged', () => {
  it('synchronous: judges nothing before every rollout has ended, then pipelines each sample', async () => {
    const g1 = { ...group('a', 100, 50), generate: [10, 200] };
    const { run, log } = setup([g1, group('b', 300, 50)], { mode: 'synchronous', limits: { rollout: 2 } });
    const result = await run();
    const firstJudged = log.events.findIndex((e) => e.includes('judged'));
    expect(log.events.findIndex((e) => e.includes('rollout-end b'))).toBeLessThan(firstJudged);
    // a#0 is judged right after its own generation (300 + 10 + 50), not after a#1's long one.
    expect(log.events).toContain('360 judged a#0');
    expect(result.metrics.stepTimeMs).toBe(300 + 200 + 50);
  });

  it("staged (the seed's loop): judges nothing before every generation has ended", async () => {
    const g1 = { ...group('a', 100, 50), generate: [10, 200] };
    const { run, log } = setup([g1, group('b', 300, 50)], { mode: 'staged', limits: { rollout: 2 } });
    const result = await run();
    expect(
      log.events.filter((e) => e.includes('judged')).every((e) => Number(e.split(' ')[0]) >= 300 + 200 + 50),
    ).toBe(true);
    expect(result.metrics.stepTimeMs).toBe(300 + 200 + 50);
  });
});

describe('runStepPipeline: failures', () => {
  it('records a failed judge call as missing and computes the group from the rest', async () => {
    const g = {
      ...group('a', 10, 10, [1, 0, 0.5, 0.25]),
      judgeError: (i: number) =>
        i === 1
          ? new ProviderCallError({ port: 'judge', provider: 'sim', message: 'overloaded', status: 503 })
          : undefined,
    };
    const result = await setup([g]).run();
    const r = result.groups[0]!;
    expect(r.samples[1]!.reward).toMatchObject({
      status: 'missing',
      cause: { stage: 'judge', kind: 'provider_error' },
    });
    expect(r.rewards).toEqual([1, null, 0.5, 0.25]);
    expect(r.advantages).toEqual(inUpdate([1, null, 0.5, 0.25]));
    expect(r.advantages.map((a) => a !== null)).toEqual([true, false, true, true]);
    expect(r.status).toBe('usable');
    expect(result.metrics.failures).toEqual({ 'judge:provider_error': 1 });
    expect(result.metrics.samplesScored).toBe(3);
  });

  it('lets a group with fewer than two valid rewards contribute nothing', async () => {
    const g = {
      ...group('a', 10, 10, [1, 0]),
      judgeError: (i: number) => (i === 0 ? new Error('bad') : undefined),
    };
    const result = await setup([g]).run();
    expect(result.groups[0]!.status).toBe('underfilled');
    expect(result.groups[0]!.advantages).toEqual([null, null]);
    expect(result.metrics.promptsScored).toBe(1);
    expect(result.metrics.promptsUsable).toBe(0);
  });

  it('misses the reward deadline: the slow call is aborted and recorded as missing', async () => {
    const g = { ...group('a', 10, 10, [1, 0, 0.5]), judge: [10, 500, 10] };
    const { run, log } = setup([g], { deadlines: { rewardTimeoutMs: 100 } });
    const result = await run();
    expect(result.groups[0]!.samples[1]!.reward).toMatchObject({
      status: 'missing',
      cause: { stage: 'judge', kind: 'deadline', message: 'reward deadline of 100 ms' },
    });
    expect(log.aborted).toEqual(['judge a#1']);
    // The reward deadline runs per call from its start: rollout 0-10, generation 10-20, judging 20-120.
    expect(result.metrics.stepTimeMs).toBe(120);
  });

  it('measures the prompt deadline from the rollout start, not the step start', async () => {
    // One rollout slot: b starts at 300 and ends at 650, inside its 600 ms prompt deadline.
    const { run } = setup([group('a', 300, 10), group('b', 350, 10)], {
      deadlines: { totalTimeoutMs: 600 },
      limits: { rollout: 1 },
    });
    const result = await run();
    expect(result.metrics.samplesScored).toBe(4);
  });

  it('drops zero-variance groups from the update when asked', async () => {
    const { run } = setup([group('flat', 10, 10, [1, 1]), group('mixed', 10, 10, [1, 0])], {
      advantage: { dropZeroVarianceGroups: true },
    });
    const result = await run();
    expect(result.groups[0]!.status).toBe('zero-variance');
    expect(result.groups[0]!.advantages).toEqual([null, null]);
    expect(result.groups[1]!.advantages.map((a) => a !== null)).toEqual([true, true]);
    expect(result.metrics.promptsUsable).toBe(1);
  });

  it('keeps going when onGroup fails (e.g. a store write), and reports it', async () => {
    const groups = [group('a', 10, 10), group('b', 20, 10), group('c', 30, 10)];
    const { run } = setup(groups, {
      onGroup: (r) => {
        if (r.groupIndex === 1) throw new Error('disk full');
      },
    });
    const result = await run();
    expect(result.groups.map((g) => g.rewards)).toEqual([
      [1, 0],
      [1, 0],
      [1, 0],
    ]);
    expect(result.callbackErrors).toHaveLength(1);
    expect(result.callbackErrors[0]).toMatchObject({ groupIndex: 1, error: { message: 'disk full' } });
  });

  it('misses the prompt deadline during the rollout', async () => {
    const { run } = setup([group('late', 700, 10), group('fine', 10, 10)], {
      deadlines: { totalTimeoutMs: 600 },
      limits: { rollout: 2 },
    });
    const result = await run();
    expect(
      result.groups[0]!.samples.every(
        (s) =>
          s.reward.status === 'missing' &&
          s.reward.cause.stage === 'episode' &&
          s.reward.cause.kind === 'deadline',
      ),
    ).toBe(true);
    expect(result.groups[0]!.samples.every((s) => s.sample === null)).toBe(true);
    expect(result.groups[1]!.rewards).toEqual([1, 0]);
    expect(result.metrics.failures).toEqual({ 'episode:deadline': 2 });
  });

  it('submits finished members of unfinished groups at the step deadline (partial submit)', async () => {
    const g: SimGroup = {
      name: 'a',
      rollout: [10, 20, 30, 500],
      generate: [5, 5, 5, 5],
      judge: [5, 5, 5, 5],
      reward: [1, 0, 1, 0],
    };
    const notStarted = group('b', 10, 5);
    const { run } = setup([g, notStarted], { deadlines: { stepTimeoutMs: 100 }, limits: { rollout: 1 } });
    const result = await run();
    const a = result.groups[0]!;
    expect(a.partial).toBe(true);
    expect(a.rewards).toEqual([1, 0, 1, null]);
    expect(a.samples[3]!.reward).toMatchObject({
      status: 'missing',
      cause: { stage: 'episode', kind: 'deadline' },
    });
    expect(a.advantages).toEqual(inUpdate([1, 0, 1, null]));
    expect(result.groups[1]!.rewards).toEqual([null, null]);
    expect(result.metrics).toMatchObject({
      samplesTotal: 6,
      samplesScored: 3,
      promptsScored: 1,
      promptsUsable: 1,
      partialGroups: 1,
    });
  });

  it('turns a rollout that throws into missing rewards for its group', async () => {
    const clock = createVirtualClock();
    const stages: PipelineStages<SimGroup, SimSample> = {
      ...simStages(clock, { events: [], aborted: [], inFlight: 0 }),
      rollout: async () => {
        throw new Error('policy crashed');
      },
    };
    const result = await clock.run(runStepPipeline({ groups: [group('a', 10, 10)], stages, clock }));
    expect(result.groups[0]!.samples[0]!.reward).toMatchObject({
      status: 'missing',
      cause: { stage: 'episode', kind: 'error', message: 'policy crashed' },
    });
  });
});

describe('runStepPipeline: cancellation', () => {
  it('aborts every in-flight call and rejects with AbortedError, leaving no timer behind', async () => {
    const controller = new AbortController();
    const { clock, log } = setup([]);
    // One judge call takes 50 ms to wind down after the abort, its siblings none: the step must
    // wait for the slow one too (a group settling on its first rejected sample would not).
    log.windDownMs = (label) => (label === 'judge a#2' ? 50 : 0);
    const groups = [group('a', 10, 1000, [1, 0, 1]), group('b', 1000, 10), group('c', 1000, 10)];
    const pipeline = runStepPipeline({
      groups,
      stages: simStages(clock, log),
      clock,
      signal: controller.signal,
      limits: { rollout: 2 },
    });
    const caught = pipeline.catch((error: unknown) => error);
    await clock.advance(50);
    // a was buffered at 10 ms and freed its rollout slot: 3 judge calls of a, 2 rollouts each of b and c.
    expect(log.inFlight).toBe(7);
    controller.abort();
    let settled = false;
    void caught.then(() => {
      settled = true;
    });
    await clock.advance(10);
    expect(settled).toBe(false);
    await clock.advance(60);
    const error = await caught;
    expect(AbortedError.isInstance(error)).toBe(true);
    expect(log.inFlight).toBe(0);
    expect(log.aborted.sort()).toEqual([
      'judge a#0',
      'judge a#1',
      'judge a#2',
      'rollout b#0',
      'rollout b#1',
      'rollout c#0',
      'rollout c#1',
    ]);
    expect(clock.pendingTimers).toBe(0);
  });
});

describe('runStepPipeline: bounds', () => {
  it('keeps buffered and in-flight groups within their caps when the judge is slower than generation', async () => {
    const groups = Array.from({ length: 20 }, (_, i) => group(`g${i}`, 10, 200));
    const { run, log } = setup(groups, {
      limits: { rollout: 2, bufferedGroups: 3, rewardGroups: 2, score: 4, generate: 4 },
    });
    const result = await run();
    expect(result.metrics.peak.rollout).toBeLessThanOrEqual(2);
    expect(result.metrics.peak.bufferedGroups).toBeLessThanOrEqual(3);
    expect(result.metrics.peak.rewardGroups).toBeLessThanOrEqual(2);
    expect(result.metrics.peak.score).toBeLessThanOrEqual(4);
    // Counted inside the stages, not by the semaphores that enforce the caps.
    expect(log.byKind!.judge!.peak).toBe(4);
    expect(log.byKind!.generate!.peak).toBeLessThanOrEqual(4);
    expect(log.byKind!.rollout!.peak).toBeLessThanOrEqual(2 * 2);
    // Backpressure: rollouts wait for room instead of racing ahead of the judge.
    const started = log.events.filter((e) => e.includes('rollout-start')).map((e) => Number(e.split(' ')[0]));
    const byTime400 = started.filter((t) => t <= 400).length;
    // Finished (2 by 400 ms) + in the reward stage (2) + one in the consumer's hand + buffered (3) + rolling out (2).
    expect(byTime400).toBeLessThanOrEqual(2 + 2 + 1 + 3 + 2);
    expect(result.metrics.samplesScored).toBe(40);
  });

  it('names the limit or deadline that is invalid', async () => {
    const clock = createVirtualClock();
    await expect(
      runStepPipeline({
        groups: [],
        stages: simStages(clock, { events: [], aborted: [], inFlight: 0 }),
        limits: { score: 0 },
      }),
    ).rejects.toThrow(/limits\.score/);
    await expect(
      runStepPipeline({
        groups: [],
        stages: simStages(clock, { events: [], aborted: [], inFlight: 0 }),
        deadlines: { rewardTimeoutMs: -1 },
      }),
    ).rejects.toThrowError(InvalidArgumentError);
    await expect(
      runStepPipeline({
        groups: [],
        stages: simStages(clock, { events: [], aborted: [], inFlight: 0 }),
        mode: 'eager' as never,
      }),
    ).rejects.toThrow(/'mode'/);
  });
});
