import type { RewardOutcome } from '../reward/combine';
import type { GroupRuleOptions, GroupStatus } from '../rl/group-rule';
import type { Clock } from '../../ports/clock';

/**
 * The stages one step's groups flow through (docs/method.md#streaming-rewards). A stage reports
 * failure by throwing; the pipeline records it as a missing reward with its cause and goes on.
 */
export interface PipelineStages<G, S> {
  /** Number of rollouts of a group (n_agent). */
  groupSize(group: G): number;
  /**
   * Runs a group's rollouts. Calls `emit(index, sample)` as each rollout ends (so that, at a step
   * deadline, finished members of an unfinished group can still be scored) and resolves when all have.
   */
  rollout(group: G, context: StageContext & { emit: (index: number, sample: S) => void }): Promise<void>;
  /** Terminal generation (the frozen Generator's answer) for one sample; optional. */
  generate?(sample: S, context: StageContext): Promise<void>;
  /** The sample's reward. A `missing` outcome is recorded as such; a throw is a failure of the judging stage. */
  score(sample: S, context: StageContext): Promise<RewardOutcome>;
  /**
   * The sample as it leaves the step, given its reward and advantage (`null`: not in the update),
   * called once per finished sample when its group is assembled. Default: the sample unchanged.
   */
  complete?(sample: S, reward: RewardOutcome, advantage: number | null): S;
}

export interface StageContext {
  signal: AbortSignal;
}

/** The concurrency caps of the step pipeline, per stage. */
export interface PipelineLimits {
  /** Groups rolling out at once. */
  rollout: number;
  /** Terminal generation calls in flight. */
  generate: number;
  /** Scoring (judge) calls in flight. */
  score: number;
  /** Finished groups waiting for the reward stages (the bounded buffer between the stages). */
  bufferedGroups: number;
  /** Groups in the reward stages at once. */
  rewardGroups: number;
}

export interface PipelineDeadlines {
  /** From a group's rollout start to its last reward (seed default 600 s). */
  totalTimeoutMs: number;
  /** The longest one reward call (terminal generation or judging, retries included) may run once started (seed default 90 s). */
  rewardTimeoutMs: number;
  /** From the step's start: rollouts still running are stopped; their finished members are still scored. */
  stepTimeoutMs: number | null;
}

export const DEFAULT_PIPELINE_LIMITS: Readonly<PipelineLimits> = Object.freeze({
  rollout: 4,
  generate: 64,
  score: 64,
  bufferedGroups: 8,
  rewardGroups: 64,
});
export const DEFAULT_PIPELINE_DEADLINES: Readonly<PipelineDeadlines> = Object.freeze({
  totalTimeoutMs: 600_000,
  rewardTimeoutMs: 90_000,
  stepTimeoutMs: null,
});

/**
 * How a step schedules rewards: `streaming` (a group's rewards as soon as it is rolled out),
 * `synchronous` (all rollouts, then all rewards) or `staged` (rollouts, then generations, then
 * judgements).
 */
export type PipelineMode = 'streaming' | 'synchronous' | 'staged';
export const PIPELINE_MODES: readonly PipelineMode[] = ['streaming', 'synchronous', 'staged'];
export const DEFAULT_PIPELINE_MODE: PipelineMode = 'streaming';

export interface StepPipelineOptions<G, S> {
  groups: readonly G[];
  stages: PipelineStages<G, S>;
  /**
   * `streaming`: a group's rewards start as soon as its rollouts end, while others still roll out.
   * `synchronous`: all rollouts, then all rewards (each sample's generation then judging).
   * `staged`: the seed's loop: all rollouts, then all generation, then all judging.
   */
  mode?: PipelineMode;
  limits?: Partial<PipelineLimits>;
  deadlines?: Partial<PipelineDeadlines>;
  advantage?: GroupRuleOptions;
  clock?: Clock;
  /** Cancels the step: every in-flight call is aborted and the pipeline rejects with AbortedError. */
  signal?: AbortSignal;
  /**
   * Called as each group's rewards are assembled (completion order), e.g. to store it. A failure
   * here does not stop the step: it is returned in `callbackErrors`.
   */
  onGroup?: (result: GroupResult<S>) => void | Promise<void>;
}

export interface SampleResult<S> {
  index: number;
  /** `null` when the rollout never finished (deadline or failure). */
  sample: S | null;
  reward: RewardOutcome;
}

export interface GroupResult<S> {
  groupIndex: number;
  samples: SampleResult<S>[];
  rewards: Array<number | null>;
  /** Whether the group takes part in the update (the group rule, docs/method.md#groups). */
  status: GroupStatus;
  /** Per sample: its advantage, or `null` when it takes no part in the update. */
  advantages: Array<number | null>;
  /** Some rollouts were cut by the step deadline and the rest submitted anyway. */
  partial: boolean;
  /** Clock time when the group's rewards were assembled, relative to the step start. */
  completedAtMs: number;
}

/**
 * One step's pipeline figures: time, samples scored and missing, peak concurrency and buffering.
 */
export interface PipelineMetrics {
  mode: PipelineMode;
  stepTimeMs: number;
  samplesTotal: number;
  /** Samples with a reward (not missing). */
  samplesScored: number;
  samplesMissing: number;
  promptsTotal: number;
  /** Prompts with at least one reward. */
  promptsScored: number;
  /** Prompts that contribute to the update (two or more valid rewards, not dropped). */
  promptsUsable: number;
  partialGroups: number;
  /** Missing rewards by `${stage}:${kind}`. */
  failures: Record<string, number>;
  peak: { rollout: number; generate: number; score: number; bufferedGroups: number; rewardGroups: number };
  limits: PipelineLimits;
}

export interface StepResult<S> {
  /** In the order the groups were given. */
  groups: GroupResult<S>[];
  metrics: PipelineMetrics;
  /** Failures of `onGroup`, by group. */
  callbackErrors: Array<{ groupIndex: number; error: unknown }>;
}
