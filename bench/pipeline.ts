// Streaming rewards versus the synchronous mode (all rollouts, then all rewards) and the staged
// mode (the seed's loop: all rollouts, then all generation, then all judging), on seeded simulated
// workloads. Real timers, time scaled down: 1 simulated second = MS_PER_SECOND real milliseconds;
// the seed's deadlines (600 s per prompt, 90 s per reward call) are scaled the same way.
// Prints one JSON line per figure.
import { createSystemClock } from '../src/core/concurrency/clock';
import { runStepPipeline } from '../src/core/pipeline/step-pipeline';
import type { PipelineLimits, PipelineMode, PipelineStages } from '../src/core/pipeline/types';
import type { RewardOutcome } from '../src/core/reward/combine';

const MS_PER_SECOND = Number(process.env.BENCH_MS_PER_SECOND ?? 10);
const SEEDS = Number(process.env.BENCH_SEEDS ?? 3);

interface Scenario {
  name: string;
  description: string;
  groups: number;
  nAgent: number;
  /** Seconds per group rollout, uniform. */
  rollout: [number, number];
  /** Log-normal latencies in seconds: median and 99th percentile. */
  generator: { median: number; p99: number };
  judge: { median: number; p99: number };
  limits: PipelineLimits;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'reward-ports-rate-limited',
    description:
      'B=32 x n_agent=16 (the size of focused round 3, docs/method.md#settings-table); rollouts 1-4 s per group, one group at a time; frozen generator median 3 s p99 15 s and judge median 2 s p99 30 s, each capped at 24 concurrent calls',
    groups: 32,
    nAgent: 16,
    rollout: [1, 4],
    generator: { median: 3, p99: 15 },
    judge: { median: 2, p99: 30 },
    limits: { rollout: 1, generate: 24, score: 24, bufferedGroups: 32, rewardGroups: 32 },
  },
  {
    name: 'judge-slower-than-generation',
    description:
      'B=32 x n_agent=8; rollouts 1-4 s per group, 4 groups at a time; generator median 1 s p99 4 s (cap 8); judge median 2 s p99 30 s capped at 4: the judge is the bottleneck, with 2 buffered and 2 rewarding groups at most (backpressure)',
    groups: 32,
    nAgent: 8,
    rollout: [1, 4],
    generator: { median: 1, p99: 4 },
    judge: { median: 2, p99: 30 },
    limits: { rollout: 4, generate: 8, score: 4, bufferedGroups: 2, rewardGroups: 2 },
  },
  {
    name: 'judge-latency-uncapped',
    description:
      'B=16 x n_agent=8; rollouts 1-4 s per group, one at a time; generator median 1 s p99 4 s; judge median 2 s p99 30 s; no binding caps (latency-bound: streaming can gain at most 2x here)',
    groups: 16,
    nAgent: 8,
    rollout: [1, 4],
    generator: { median: 1, p99: 4 },
    judge: { median: 2, p99: 30 },
    limits: { rollout: 1, generate: 128, score: 128, bufferedGroups: 16, rewardGroups: 16 },
  },
];

/** mulberry32: a small seeded PRNG. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function gaussian(random: () => number): number {
  const u = Math.max(random(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

function logNormal(random: () => number, { median, p99 }: { median: number; p99: number }): number {
  const sigma = Math.log(p99 / median) / 2.3263478740408408;
  return median * Math.exp(sigma * gaussian(random));
}

interface Workload {
  rollout: number[];
  generate: number[][];
  judge: number[][];
}

function makeWorkload(scenario: Scenario, seed: number): Workload {
  const random = rng(seed);
  const [lo, hi] = scenario.rollout;
  return {
    rollout: Array.from({ length: scenario.groups }, () => lo + (hi - lo) * random()),
    generate: Array.from({ length: scenario.groups }, () =>
      Array.from({ length: scenario.nAgent }, () => logNormal(random, scenario.generator)),
    ),
    judge: Array.from({ length: scenario.groups }, () =>
      Array.from({ length: scenario.nAgent }, () => logNormal(random, scenario.judge)),
    ),
  };
}

/**
 * A lower bound on any schedule's step time under the same rollout order and stage caps (seconds;
 * it ignores the buffer and reward-group caps, so it is loose where those bind):
 * the longest chain (a group's rollout end + its slowest generation + judgement), and for each
 * capped reward stage the release-date bound max over t of (t + work released at or after t / cap).
 */
function lowerBound(workload: Workload, limits: PipelineLimits): number {
  const slots = new Array<number>(limits.rollout).fill(0);
  const rolloutEnd = workload.rollout.map((duration) => {
    const k = slots.indexOf(Math.min(...slots));
    slots[k] = slots[k]! + duration;
    return slots[k]!;
  });
  const chains = workload.generate.flatMap((row, g) =>
    row.map((gen, i) => rolloutEnd[g]! + gen + workload.judge[g]![i]!),
  );
  const stageBound = (jobs: Array<{ release: number; work: number; tail: number }>, cap: number) => {
    const sorted = [...jobs].sort((a, b) => b.release - a.release);
    let best = 0;
    let work = 0;
    let minTail = Number.POSITIVE_INFINITY;
    for (const job of sorted) {
      work += job.work;
      minTail = Math.min(minTail, job.tail);
      best = Math.max(best, job.release + work / cap + minTail);
    }
    return best;
  };
  const generation = stageBound(
    workload.generate.flatMap((row, g) =>
      row.map((gen, i) => ({ release: rolloutEnd[g]!, work: gen, tail: workload.judge[g]![i]! })),
    ),
    limits.generate,
  );
  const judging = stageBound(
    workload.judge.flatMap((row, g) =>
      row.map((judge, i) => ({ release: rolloutEnd[g]! + workload.generate[g]![i]!, work: judge, tail: 0 })),
    ),
    limits.score,
  );
  return Math.max(Math.max(...chains), generation, judging);
}

const OK: RewardOutcome = {
  status: 'ok',
  value: 1,
  components: { formatPassed: true, judgeScore: 1, ndcg: 1 },
  weights: { judge: 1, ndcg: 0, format: 0 },
};

function stages(
  workload: Workload,
  clock = createSystemClock(),
): PipelineStages<number, { group: number; index: number }> {
  return {
    groupSize: (g) => workload.generate[g]!.length,
    async rollout(g, { signal, emit }) {
      await clock.sleep(workload.rollout[g]! * MS_PER_SECOND, signal);
      workload.generate[g]!.forEach((_x, index) => emit(index, { group: g, index }));
    },
    generate: (s, { signal }) => clock.sleep(workload.generate[s.group]![s.index]! * MS_PER_SECOND, signal),
    async score(s, { signal }) {
      await clock.sleep(workload.judge[s.group]![s.index]! * MS_PER_SECOND, signal);
      return OK;
    },
  };
}

async function run(scenario: Scenario, workload: Workload, mode: PipelineMode) {
  const started = performance.now();
  const result = await runStepPipeline({
    groups: workload.rollout.map((_x, g) => g),
    stages: stages(workload),
    mode,
    limits: scenario.limits,
    deadlines: { totalTimeoutMs: 600 * MS_PER_SECOND, rewardTimeoutMs: 90 * MS_PER_SECOND },
  });
  return { ms: performance.now() - started, metrics: result.metrics };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const round = (x: number, digits = 3) => Number(x.toFixed(digits));
const emit = (line: Record<string, unknown>) => console.log(JSON.stringify({ bench: 'pipeline', ...line }));

for (const scenario of SCENARIOS) {
  const overSync: number[] = [];
  const overStaged: number[] = [];
  const toBound: number[] = [];
  let boundsHeld = true;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const workload = makeWorkload(scenario, seed);
    const streaming = await run(scenario, workload, 'streaming');
    const synchronous = await run(scenario, workload, 'synchronous');
    const staged = await run(scenario, workload, 'staged');
    const boundMs = lowerBound(workload, scenario.limits) * MS_PER_SECOND;
    overSync.push(synchronous.ms / streaming.ms);
    overStaged.push(staged.ms / streaming.ms);
    toBound.push(streaming.ms / boundMs);
    emit({
      scenario: scenario.name,
      seed,
      figure: 'step_time_ms',
      streaming: round(streaming.ms, 1),
      synchronous: round(synchronous.ms, 1),
      staged: round(staged.ms, 1),
      speedup_over_synchronous: round(synchronous.ms / streaming.ms),
      speedup_over_staged: round(staged.ms / streaming.ms),
      missing_rewards: {
        streaming: streaming.metrics.samplesMissing,
        synchronous: synchronous.metrics.samplesMissing,
        staged: staged.metrics.samplesMissing,
      },
    });
    emit({
      scenario: scenario.name,
      seed,
      figure: 'streaming_vs_critical_path',
      streaming: round(streaming.ms, 1),
      lower_bound: round(boundMs, 1),
      ratio: round(streaming.ms / boundMs),
    });
    const peaks = streaming.metrics.peak;
    const limits = scenario.limits;
    const within =
      peaks.rollout <= limits.rollout &&
      peaks.generate <= limits.generate &&
      peaks.score <= limits.score &&
      peaks.bufferedGroups <= limits.bufferedGroups &&
      peaks.rewardGroups <= limits.rewardGroups;
    boundsHeld &&= within;
    emit({
      scenario: scenario.name,
      seed,
      figure: 'streaming_peaks',
      rollout: [peaks.rollout, limits.rollout],
      generate: [peaks.generate, limits.generate],
      score: [peaks.score, limits.score],
      buffered_groups: [peaks.bufferedGroups, limits.bufferedGroups],
      reward_groups: [peaks.rewardGroups, limits.rewardGroups],
      within_bounds: within,
    });
  }
  emit({
    scenario: scenario.name,
    figure: 'summary',
    description: scenario.description,
    seeds: SEEDS,
    ms_per_simulated_second: MS_PER_SECOND,
    speedup_over_synchronous_median: round(median(overSync)),
    speedup_over_synchronous_range: [round(Math.min(...overSync)), round(Math.max(...overSync))],
    speedup_over_staged_median: round(median(overStaged)),
    speedup_over_staged_range: [round(Math.min(...overStaged)), round(Math.max(...overStaged))],
    streaming_over_lower_bound_median: round(median(toBound)),
    streaming_over_lower_bound_max: round(Math.max(...toBound)),
    peaks_within_bounds: boundsHeld,
  });
}
