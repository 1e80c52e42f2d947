import { isJudgeSuccess } from '../../core/reward/success';
import { countBuckets, assignBuckets } from '../../core/curation/buckets';
import { promptStats, summariseTrajectory } from '../../core/curation/episodes';
import type { DifficultyBucket } from '../../core/curation/buckets';
import { REWARD_PRESETS, type RewardWeights } from '../../core/reward/combine';
import type { Trajectory } from '../../core/trajectory/trajectory';
import { mean } from '../../core/stats';

/** One rollout of a step as the report reads it from a phase's `trajectory.jsonl`. */
export interface StepRollout {
  runId: string;
  step: number;
  trajectory: Trajectory;
}

/** The per-step metrics the report draws (`StepMetrics` from `metric.jsonl`, crop and small-print rates from the rollouts). */
/** The update's figures of `StepMetrics` drawn as they are (older run folders may lack them: no points). */
export const UPDATE_METRICS = [
  'loss',
  'kl',
  'entropy',
  'gradNorm',
  'clipFraction',
  'rolloutTokensPerSecond',
  'trainTokensPerSecond',
] as const;

export const CURVE_METRICS = [
  'reward',
  'success',
  'ndcg',
  'turns',
  'cropRate',
  'smallPrintSuccess',
  ...UPDATE_METRICS,
] as const;
export type CurveMetric = (typeof CURVE_METRICS)[number];

export interface ReportPhase {
  name: string;
  /** Global steps of the phase's first and last recorded step (`null` when it recorded none). */
  firstStep: number | null;
  lastStep: number | null;
  /** Added to the phase's own step numbers to place them on the run's axis. */
  stepOffset: number;
  /** The phase's reward, e.g. `0.1 format + 0.9 NDCG`. */
  reward: string;
}

export interface ReportCurves {
  /** The run's step axis: the phases one after another (phase k starts after the planned steps of phases 1..k-1). */
  steps: number[];
  /** Per point: the phase and its own step number. */
  phase: string[];
  phaseStep: number[];
  phases: ReportPhase[];
  /** Per metric, the raw value per point and its EMA (restarted at each phase). */
  metrics: Record<CurveMetric, { raw: Array<number | null>; smoothed: Array<number | null> }>;
  smoothing: number;
}

export interface PhaseInput {
  name: string;
  /** Planned steps (the config's `steps`): the next phase starts after them. */
  steps: number;
  weights: string | RewardWeights;
  metrics: ReadonlyArray<
    {
      step: number;
      rewardMean: number | null;
      successRate: number | null;
      ndcgMean: number;
      turnsMean: number;
    } & Partial<Record<(typeof UPDATE_METRICS)[number], number>>
  >;
  rollouts: readonly StepRollout[];
}

const round = (x: number) => Number(x.toFixed(3));

function perMetric<T>(make: () => T): Record<CurveMetric, T> {
  return Object.fromEntries(CURVE_METRICS.map((m) => [m, make()])) as Record<CurveMetric, T>;
}

/** A phase's reward in words, from its weights (a preset name or explicit): `r = 0` when the format gate fails (docs/method.md#combined-reward). */
export function rewardDefinition(weights: string | RewardWeights, scheme = 'searcher'): string {
  if (scheme === 'search-r1') return 'Search-R1 exact match';
  const resolved =
    typeof weights === 'string'
      ? (REWARD_PRESETS as Record<string, RewardWeights | undefined>)[weights]
      : weights;
  if (!resolved) return `weights '${String(weights)}'`;
  const terms = (
    [
      ['format', resolved.format],
      ['judge', resolved.judge],
      ['NDCG', resolved.ndcg],
    ] as const
  )
    .filter(([, w]) => w !== 0)
    .map(([name, w]) => `${round(w)} ${name}`);
  return `${terms.length > 0 ? terms.join(' + ') : '0'}${typeof weights === 'string' ? ` ('${weights}')` : ''}`;
}

/**
 * Exponential moving average with TensorBoard's debiasing (the first points are not pulled towards 0);
 * `null`s are skipped and stay `null`.
 */
export function emaSmooth(values: ReadonlyArray<number | null>, smoothing: number): Array<number | null> {
  let last = 0;
  let weight = 0;
  return values.map((v) => {
    if (v === null || !Number.isFinite(v)) return null;
    last = last * smoothing + (1 - smoothing) * v;
    weight = weight * smoothing + (1 - smoothing);
    return last / weight;
  });
}

/** The mean, null for no values (a step without such rollouts draws no point). */
const meanOrNull = (xs: readonly number[]) => (xs.length === 0 ? null : mean(xs));

/** Crop rate (share of rollouts with a crop turn) and small-print success (the judge's full score among judged rollouts of small-print questions) per step. */
export function rolloutRates(
  rollouts: readonly StepRollout[],
  smallPrint: ReadonlySet<string>,
): Map<number, { cropRate: number | null; smallPrintSuccess: number | null }> {
  const byStep = new Map<number, Trajectory[]>();
  for (const r of rollouts) byStep.set(r.step, [...(byStep.get(r.step) ?? []), r.trajectory]);
  const rates = new Map<number, { cropRate: number | null; smallPrintSuccess: number | null }>();
  for (const [step, trajectories] of byStep) {
    const judgedSmall = trajectories
      .filter((t) => smallPrint.has(t.promptUid))
      .flatMap((t) => {
        const score = t.rewardDetail?.components.judgeScore;
        return score === null || score === undefined ? [] : [isJudgeSuccess(score) ? 1 : 0];
      });
    rates.set(step, {
      cropRate: meanOrNull(trajectories.map((t) => (t.turns.some((turn) => turn.crop) ? 1 : 0))),
      smallPrintSuccess: meanOrNull(judgedSmall),
    });
  }
  return rates;
}

/** The run's curves: one axis over the phases, a series per phase, EMA-smoothed per phase. */
export function reportCurves(
  phases: readonly PhaseInput[],
  smallPrint: ReadonlySet<string>,
  options: { smoothing?: number; scheme?: string } = {},
): ReportCurves {
  const smoothing = options.smoothing ?? 0.6;
  const curves: ReportCurves = {
    steps: [],
    phase: [],
    phaseStep: [],
    phases: [],
    metrics: perMetric(() => ({ raw: [], smoothed: [] })),
    smoothing,
  };
  let stepOffset = 0;
  for (const phase of phases) {
    const rates = rolloutRates(phase.rollouts, smallPrint);
    // A resumed phase runs the steps after its checkpoint again: the last record of a step counts.
    const byStep = new Map(phase.metrics.map((m) => [m.step, m]));
    const steps = [...new Set([...byStep.keys(), ...rates.keys()])].sort((a, b) => a - b);
    const raw = perMetric((): Array<number | null> => []);
    for (const step of steps) {
      const m = byStep.get(step);
      const r = rates.get(step);
      raw.reward.push(m?.rewardMean ?? null);
      raw.success.push(m?.successRate ?? null);
      raw.ndcg.push(m?.ndcgMean ?? null);
      raw.turns.push(m?.turnsMean ?? null);
      raw.cropRate.push(r?.cropRate ?? null);
      raw.smallPrintSuccess.push(r?.smallPrintSuccess ?? null);
      for (const metric of UPDATE_METRICS) raw[metric].push(m?.[metric] ?? null);
      curves.steps.push(stepOffset + step);
      curves.phase.push(phase.name);
      curves.phaseStep.push(step);
    }
    for (const metric of CURVE_METRICS) {
      curves.metrics[metric].raw.push(...raw[metric]);
      curves.metrics[metric].smoothed.push(...emaSmooth(raw[metric], smoothing));
    }
    curves.phases.push({
      name: phase.name,
      firstStep: steps.length > 0 ? stepOffset + steps[0]! : null,
      lastStep: steps.length > 0 ? stepOffset + steps.at(-1)! : null,
      stepOffset,
      reward: rewardDefinition(phase.weights, options.scheme),
    });
    stepOffset += Math.max(phase.steps, steps.at(-1) ?? 0);
  }
  return curves;
}

/**
 * How difficulty buckets group rollouts: every (step, prompt) group, or each prompt's group at the
 * last step that saw it.
 */
export type BucketGroups = 'step-prompt' | 'last-step';

/**
 * The difficulty buckets (docs/method.md#difficulty-buckets) of rollouts: a group is a prompt's
 * rollouts at one step (its n_agent rollouts in training; one greedy rollout in an evaluation), its
 * mean NDCG bucketed B > 0.7, A 0.1-0.7, 0 below 0.1. `step-prompt` counts every (step, prompt)
 * group; `last-step` only each prompt's group at the last step that saw it.
 */
export function difficultyBuckets(
  rollouts: readonly StepRollout[],
  options: { groups?: BucketGroups; thresholds?: { bucketLow: number; bucketHigh: number } } = {},
): Record<DifficultyBucket, number> {
  const byStep = new Map<number, StepRollout[]>();
  for (const r of rollouts) byStep.set(r.step, [...(byStep.get(r.step) ?? []), r]);
  let stats = [...byStep]
    .sort(([a], [b]) => a - b)
    .flatMap(([step, group]) =>
      promptStats(group.map((r) => summariseTrajectory(r.trajectory, r.runId, step))),
    );
  if (options.groups === 'last-step') stats = [...new Map(stats.map((s) => [s.promptUid, s])).values()];
  return countBuckets(assignBuckets(stats, options.thresholds));
}
