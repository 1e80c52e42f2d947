/** How a trajectory (an ordered choice of demonstrations) was produced (docs/method.md#candidate-pools). */
export type IcdGenMethod = 'beam' | 'sample' | 'random' | 'global_positive_transfer';

/** How a trajectory of the RL data was made (its `gen_method`). */
export const ICD_GEN_METHODS: readonly IcdGenMethod[] = [
  'beam',
  'sample',
  'random',
  'global_positive_transfer',
];

/** One scored choice of demonstrations for a query: `pointer` in local indices of the query's pool. */
export interface IcdTrajectory {
  pointer: number[];
  /** The same choice in global indices (written by the SDK; optional on input, for debugging). */
  pointer_global?: number[];
  /** 1 when the accuracy is above 0 (docs/method.md#icd-selection). */
  vqa_correct: 0 | 1;
  vqa_acc_score: number;
  gen_method: IcdGenMethod;
}

/** The normalised RL data of one query: a pool of exactly K global indices and its trajectories. */
export interface IcdQueryRecord {
  query_id: number;
  candidate_pool_indices: number[];
  pointer_candidates: IcdTrajectory[];
}

/** The ICD defaults, written once (docs/method.md#pool-injection, #commit-on-improve). */
export const DEFAULT_ICD_SETTINGS = Object.freeze({
  /** K: candidates per query. */
  poolSize: 64,
  /** Shots per prompt (a pointer's length). */
  shots: 2,
  /** Beam search (Lever-LM's data generation): sequences kept after each shot. */
  beamWidth: 5,
  /** GlobalPositiveMiner: candidates kept by cosine similarity over the whole table. */
  searchTopK: 300,
  /** GlobalPositiveMiner: pairs scored by the frozen model per query. */
  maxEvalPairs: 50,
  /** CandidatePoolInjector: candidates replaced per query at most. */
  maxInjectPerQuery: 8,
  /** TrajectoryQualityController: M, trajectories per query in the final data. */
  targetTrajectoryCount: 12,
  /** acc 1.0: at least 2, at most `positiveQuota`. */
  positiveMin: 2,
  positiveQuota: 4,
  /** 0 < acc < 1: at least 1, at most `partialQuota`. */
  partialMin: 1,
  partialQuota: 2,
});

/** The ICD settings, with `DEFAULT_ICD_SETTINGS` as defaults. */
export type IcdSettings = typeof DEFAULT_ICD_SETTINGS;
