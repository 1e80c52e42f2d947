// The public API of searcher-rl. Adapters live behind subpaths (`searcher-rl/mock`,
// `searcher-rl/store/jsonl`, `searcher-rl/container`), so importing this loads no vendor SDK.

// Errors
export {
  SearcherError,
  InvalidArgumentError,
  DatasetValidationError,
  ConfigValidationError,
  ProviderCallError,
  PortOutputError,
  AbortedError,
  BackendUnavailableError,
  isRetryableStatus,
  settingsError,
  resolveApiKey,
  type ErrorCode,
  type PortName,
} from './core/errors';

// Action protocol
export { parseAction, parseBoundingBox, renderAction, type Action, type ParsedTurn, type ValidTurn, type InvalidTurn, type InvalidActionReason } from './core/protocol/actions';
export { renderObservation, renderNoResults, correctiveMessage, neutraliseTags, type ObservationItem } from './core/protocol/observation';
export { ACTION_TAGS, PROTOCOL_TAGS, PROTOCOL_TAG_STRINGS, TURN_STOP_TAGS, type ActionTag, type ProtocolTag } from './core/protocol/tags';
export { createProtocolTokenizer, createVocabularyTokenizer } from './core/protocol/tokenizer';

// Trajectories
export type { Trajectory, TurnRecord, SearchRecord, CropRecord, EvidenceRef, TerminationReason } from './core/trajectory/trajectory';
export { trajectoryToJSON, trajectoryFromJSON, encodeSpecialNumbers, reviveSpecialNumbers, NUMBER_TAG } from './core/trajectory/serialize';
export { TrajectoryTokens } from './core/trajectory/builder';

// Episodes
export { runEpisodes, completeWithGenerator, selectEvidence, mapToSource, shownSize, sampleIdOf, type Episode, type EpisodeInstance, type EpisodePorts, type RunEpisodesOptions } from './core/episode/run-episodes';
export { DEFAULT_EPISODE_CONFIG, resolveEpisodeConfig, type EpisodeConfig } from './core/episode/config';
export { buildPrompt, SEARCHER_INSTRUCTIONS, ANSWER_INSTRUCTIONS } from './core/episode/prompt';
export { maxTokensAt } from './core/episode/token-budget';
export type { PromptRecord } from './core/types';
export type { PageImage, SearchHit, Evidence, TokenUsage, BoundingBox, TokenStep, Tokenizer } from './ports/types';

// Rewards
export { sequenceMatcherRatio } from './core/reward/sequence-matcher';
export { ndcgAtK, basename, type NdcgOptions } from './core/reward/ndcg';
export { checkFormatCorrectness, checkAnswerCorrectness, extractAnswer, searchR1Reward, NOT_FOUND_ANSWER } from './core/reward/search-r1';
export {
  combineReward,
  phase1Reward,
  rewardValue,
  DEFAULT_REWARD_WEIGHTS,
  REWARD_PRESETS,
  type RewardWeights,
  type RewardComponents,
  type RewardOutcome,
  type RewardFailure,
} from './core/reward/combine';
export { scoreTrajectory, formatPassed, type ScoreOptions } from './core/reward/score';

// RL math
export { groupAdvantages, batchAdvantages, isMissingReward, type GroupAdvantageOptions, type BatchAdvantageOptions, type BatchAdvantages, type MaybeReward } from './core/rl/advantages';
export { policyLoss, type PolicyLossInput, type PolicyLossResult, type PolicyLossKind } from './core/rl/policy-loss';
export { klPenalty, type KlPenaltyInput, type KlPenaltyResult, type KlEstimator } from './core/rl/kl';
export { LOSS_AGGREGATIONS, type LossAggregation } from './core/rl/aggregation';
export { expandGroups } from './core/rl/groups';
export { buildUpdateBatch, createLossFunction, type UpdateBatch, type LossSettings } from './core/rl/update-batch';
export { updatePolicy, checkPolicyUpdateSettings, runSft, sftExamples, sftLossFunction, type PolicyUpdateSettings, type PolicyUpdateSummary, type SftExample, type SftSummary } from './core/rl/policy-update';
export { createRandom, mixSeed, permutation, hashString, type Random, type RandomState } from './core/random';

// Streaming rewards
export {
  runStepPipeline,
  DEFAULT_PIPELINE_LIMITS,
  DEFAULT_PIPELINE_DEADLINES,
  type PipelineStages,
  type StageContext,
  type PipelineLimits,
  type PipelineDeadlines,
  type StepPipelineOptions,
  type StepResult,
  type GroupResult,
  type SampleResult,
  type PipelineMetrics,
} from './core/pipeline/step-pipeline';
export { createEpisodeStages, type EpisodeGroup, type EpisodeStagePorts } from './core/pipeline/episode-stages';
export { createSystemClock, createVirtualClock, type VirtualClock } from './core/pipeline/clock';
export { Semaphore } from './core/pipeline/semaphore';
export { BoundedQueue } from './core/pipeline/bounded-queue';

// Ports
export type {
  CallOptions,
  Clock,
  SearchEngine,
  SearchOptions,
  Generator,
  GeneratorAnswer,
  Judge,
  JudgeVerdict,
  ImageOps,
  CropOptions,
  Embedder,
  EmbeddingInput,
  Store,
  StoreRecord,
  StoreRecordKind,
  StoreQuery,
  PolicyBackend,
  RolloutSession,
  AppendOptions,
  GenerateTurnOptions,
  TurnOutput,
  LogProbBatch,
  LossFunction,
  UpdateResult,
  UpdateOptions,
  PolicyCheckpoint,
} from './ports/index';

// Configuration and the container-free entry point
export { parseSearcherConfig, searcherConfigSchema, type SearcherConfig, type SearcherConfigInput } from './config';
export { createSearcher, type Searcher, type SearcherPorts, type ScoredBatch, type CollectOptions, type LostSample } from './searcher';
export { createTrainer, trainerSettingsSchema, checkpointKey, writePolicyCheckpoint, readPolicyCheckpoint, latestCheckpointKey, TIMING_METRICS, type Trainer, type TrainerSettings, type TrainerRunResult, type StepMetrics, type DataCursor } from './trainer';
