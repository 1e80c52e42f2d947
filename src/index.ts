// The public API of searcher-rl: the Searcher facade, the run (the main job) and its config, errors,
// the ports' types and the RL math. Adapters live behind subpaths (`searcher-rl/mock`,
// `searcher-rl/openai`, …), the run's parts behind `searcher-rl/run`, data-centric RL behind
// `searcher-rl/curation`, ICD behind `searcher-rl/icd`, the environment server behind
// `searcher-rl/server`; importing this loads no vendor SDK. The "What is in the package" table of
// docs/packages.md lists these names (a test checks it, and that there are at most 80).

// The Searcher and its configuration
export {
  createSearcher,
  type Searcher,
  type SearcherPorts,
  type ScoredBatch,
  type CollectOptions,
} from './searcher';
export {
  parseSearcherConfig,
  searcherConfigSchema,
  type SearcherConfig,
  type SearcherConfigInput,
  type AdaptersConfig,
  type AdaptersConfigInput,
} from './config';

// The run: the main job from code (`searcher-rl train` and `eval` call these), and its trainer
export { trainRun, evalRun } from './run/entry';
export {
  parseRunConfig,
  loadRunConfig,
  runConfigSchema,
  type RunConfig,
  type RunConfigInput,
} from './run/config';
export type { RunOptions, RunProgress } from './run/progress';
export type { EvalSummary } from './run/evaluate';
export type { TrainRunResult } from './run/run';
export { createTrainer, type Trainer, type TrainerSettings } from './run/trainer';
export type { StepMetrics } from './run/step-metrics';

// Errors
export {
  SearcherError,
  InvalidArgumentError,
  DatasetValidationError,
  ConfigValidationError,
  ProviderCallError,
  PortOutputError,
  AdapterError,
  RewardsMissingError,
  MissingDependencyError,
  AbortedError,
  BackendUnavailableError,
  ModelLayoutError,
  NotTrainableError,
  UnsupportedPortVersionError,
  type ErrorCode,
  type PortName,
} from './core/errors';

// Episodes
export { runEpisodes } from './core/episode/run-episodes';
export { createProtocolTokenizer } from './core/protocol/tokenizer';
export { trajectoryFromJSON } from './core/trajectory/serialize';
export type { Trajectory } from './core/trajectory/trajectory';
export type { PromptRecord } from './core/types';

// Rewards and the RL math
export { sequenceMatcherRatio } from './core/reward/sequence-matcher';
export { ndcgAtK } from './core/reward/ndcg';
export { searchR1Reward } from './core/reward/search-r1';
export { combineReward, REWARD_PRESETS, type RewardWeights } from './core/reward/combine';
export { groupAdvantages } from './core/rl/advantages';
export { policyLoss } from './core/rl/policy-loss';
export { klPenalty } from './core/rl/kl';
export { expandGroups } from './core/rl/groups';
export { runSft, sftExamples } from './core/rl/policy-update';
export { createRandom } from './core/random';

// Ports
export type {
  CallOptions,
  SearchEngine,
  SearchHit,
  Generator,
  Judge,
  ImageOps,
  Store,
  StoreRecord,
  PolicyBackend,
  RolloutSession,
  Tracker,
  PolicyCheckpoint,
  Evidence,
  PageImage,
  Tokenizer,
} from './ports/index';
