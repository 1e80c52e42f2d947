/**
 * Curation defaults, written once (docs/method.md#difficulty-buckets, #ground-truth-verification,
 * #focused-rounds, #rare-success-distillation). The CLI's options are built from them.
 */
export const DEFAULT_CURATION_SETTINGS = Object.freeze({
  /** Bucket B: mean phase-1 NDCG above this. */
  bucketHigh: 0.7,
  /** Bucket 0: mean phase-1 NDCG below this; A is [bucketLow, bucketHigh]. */
  bucketLow: 0.1,
  /** Verification candidates need NDCG >= this (the evidence was found). */
  candidateNdcg: 0.5,
  /** The second candidate band: 0 < judge <= this. */
  candidateJudgeHigh: 0.3,
  /** Round 1 takes bucket A prompts with mean final score <= this. */
  round1MaxScore: 0.2,
  /** Round 2 takes round-1 prompts with mean final score <= this. */
  round2MaxScore: 0.3,
  /** Distillation: prompts with success rate <= this (and at least one success). */
  distillMaxSuccessRate: 0.5,
  /** Distillation: successes kept per prompt. */
  distillTopK: 4,
  /** A success is a judge score >= this (docs/method.md#rare-success-distillation: score == 1). */
  successScore: 1,
});

/** The curation thresholds, with `DEFAULT_CURATION_SETTINGS` as defaults. */
export type CurationSettings = { -readonly [K in keyof typeof DEFAULT_CURATION_SETTINGS]: number };

/** docs/method.md#settings-table: each focused round's budget (B prompts a step, n_agent, max_turns, temperature). */
export const FOCUSED_ROUND_BUDGETS = Object.freeze({
  round1: Object.freeze({ batchSize: 16, nAgent: 8, maxTurns: 7, temperature: 1 }),
  round2: Object.freeze({ batchSize: 8, nAgent: 16, maxTurns: 15, temperature: 1 }),
  round3: Object.freeze({ batchSize: 32, nAgent: 16, maxTurns: 15, temperature: 1 }),
});

/** The budget of one focused round: prompts a step, rollouts per prompt, turns and temperature. */
export interface RoundBudget {
  batchSize: number;
  nAgent: number;
  maxTurns: number;
  temperature: number;
}
