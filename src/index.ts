// The public API of searcher-rl: what users call. Adapters live behind subpaths
// (`searcher-rl/mock`, `searcher-rl/openai`, …), helpers for adapter authors behind
// `searcher-rl/provider-utils`, test helpers behind `searcher-rl/test`; importing this loads no
// vendor SDK. The README's "What is in the package" table lists these names (a test checks it).

// Entry points
export { createSearcher, type Searcher, type SearcherPorts, type ScoredBatch, type CollectOptions, type LostSample } from './searcher';
export { parseSearcherConfig, searcherConfigSchema, type SearcherConfig, type SearcherConfigInput, type AdaptersConfig, type AdaptersConfigInput } from './config';
export { createTrainer, trainerSettingsSchema, writePolicyCheckpoint, readPolicyCheckpoint, latestCheckpointKey, TIMING_METRICS, type Trainer, type TrainerSettings, type TrainerRunResult, type StepMetrics, type DataCursor } from './run/trainer';
export { currentRecords, type SupersededCounts } from './core/store/records';

// Errors
export { SearcherError, InvalidArgumentError, DatasetValidationError, ConfigValidationError, ProviderCallError, PortOutputError, AdapterError, RewardsMissingError, MissingDependencyError, AbortedError, BackendUnavailableError, ModelLayoutError, NotTrainableError, type ErrorCode, type PortName } from './core/errors';

// Calling ports: timeouts, retries, caps, rate limits, typed failures, checked outputs
export { createPortGateway, type PortGateway, type GatewayPorts } from './core/calls/gateway';
export { withReliability } from './core/calls/with-reliability';
export { DEFAULT_CALL_POLICIES, type CallPolicy, type CallPolicies } from './core/calls/call-policy';
export type { ReliabilityDeps } from './core/calls/reliable-call';
export type { TurnResult } from './core/calls/outputs';

// Action protocol
export { parseAction, renderAction, type Action, type ParsedTurn, type ValidTurn, type InvalidTurn, type InvalidActionReason } from './core/protocol/actions';
export { ACTION_TAGS, PROTOCOL_TAG_STRINGS, TURN_STOP_TAGS, type ActionTag } from './core/protocol/tags';
export { createProtocolTokenizer, createVocabularyTokenizer } from './core/protocol/tokenizer';

// Episodes and trajectories
export { runEpisodes, type Episode, type EpisodePorts, type RunEpisodesOptions } from './core/episode/run-episodes';
export { completeWithGenerator } from './core/episode/terminal-answer';
export type { EpisodeInstance } from './core/episode/instances';
export { DEFAULT_EPISODE_CONFIG, type EpisodeConfig } from './core/episode/config';
export { buildPrompt, SEARCHER_INSTRUCTIONS, ANSWER_INSTRUCTIONS } from './core/episode/prompt';
export { completeTrajectory, type TerminalAnswer, type TrajectoryCompletion } from './core/trajectory/complete';
export type { Trajectory, TurnRecord, SearchRecord, CropRecord, EvidenceRef, TerminationReason } from './core/trajectory/trajectory';
export { trajectoryToJSON, trajectoryFromJSON } from './core/trajectory/serialize';
export type { PromptRecord } from './core/types';

// Rewards
export { sequenceMatcherRatio } from './core/reward/sequence-matcher';
export { ndcgAtK, type NdcgOptions } from './core/reward/ndcg';
export { checkFormatCorrectness, checkAnswerCorrectness, extractAnswer, searchR1Reward, NOT_FOUND_ANSWER } from './core/reward/search-r1';
export { combineReward, phase1Reward, DEFAULT_REWARD_WEIGHTS, REWARD_PRESETS, type RewardWeights, type RewardComponents, type RewardOutcome, type RewardFailure } from './core/reward/combine';
export { scoreTrajectory, formatPassed, type ScoreOptions, type RewardSettings } from './core/reward/score';

// RL math
export { groupAdvantages, type GroupAdvantageOptions, type MaybeReward } from './core/rl/advantages';
export { applyGroupRule, batchAdvantages, type GroupRuleOptions, type GroupOutcome, type GroupStatus, type BatchAdvantages } from './core/rl/group-rule';
export { policyLoss, type PolicyLossInput, type PolicyLossResult, type PolicyLossKind } from './core/rl/policy-loss';
export { klPenalty, type KlPenaltyInput, type KlPenaltyResult, type KlEstimator } from './core/rl/kl';
export { LOSS_AGGREGATIONS, type LossAggregation } from './core/rl/aggregation';
export { expandGroups } from './core/rl/groups';
export { buildUpdateBatch, createLossFunction, type UpdateBatch, type LossSettings } from './core/rl/update-batch';
export { updatePolicy, runSft, sftExamples, type PolicyUpdateSettings, type PolicyUpdateSummary, type SftExample, type SftSummary } from './core/rl/policy-update';
export { DEFAULT_RL_SETTINGS, type RlSettings } from './core/rl/settings';
export { createRandom, RANDOM_STREAMS, type Random, type RandomState } from './core/random';
export {
  DEFAULT_ICD_SETTINGS,
  ICD_GEN_METHODS,
  localToGlobal,
  globalToLocal,
  pointerToGlobal,
  validateIcdRecords,
  createEmbeddingTable,
  embeddingRow,
  l2Normalise,
  similarities,
  topK,
  parseIcdRecords,
  parseIcdText,
  formatIcdJsonl,
  normaliseIcdPools,
  gatherPoolEmbeddings,
  createIcdDatasetView,
  vqaSoftAccuracy,
  normaliseVqaAnswer,
  isVqaCorrect,
  createIcdScoreCall,
  GlobalPositiveMiner,
  CandidatePoolInjector,
  oracleAtK,
  queryOracle,
  TrajectoryQualityController,
  selectorGrpoLoss,
  type IcdGenMethod,
  type IcdQueryRecord,
  type IcdTrajectory,
  type IcdSettings,
  type EmbeddingTable,
  type NormaliseOptions,
  type NormaliseReport,
  type IcdDatasetItem,
  type IcdDatasetView,
  type IcdScoreCall,
  type GlobalPositiveMinerOptions,
  type MinedPositive,
  type InjectionResult,
  type InjectionReplacement,
  type TrajectoryQualityOptions,
  type SelectorGrpoInput,
  type SelectorGrpoResult,
  demonstrationsFromDistilled,
} from './core/icd/index';
export {
  DEFAULT_CURATION_SETTINGS,
  FOCUSED_ROUND_BUDGETS,
  summariseTrajectory,
  promptStats,
  bucketOf,
  assignBuckets,
  countBuckets,
  VERIFICATION_LABELS,
  EXCLUDING_LABELS,
  verificationCandidates,
  labelCandidate,
  parseVerificationLabel,
  excludedPrompts,
  verifyCandidates,
  buildRound1,
  buildRound2,
  selectRareSuccesses,
  compareForDistillation,
  sftRowFromTrajectory,
  SFT_FORMAT_VERSION,
  ACTION_TAG_PATTERN,
  OBSERVATION_CLAIM_PATTERNS,
  checkThinkRewrite,
  hasObservationClaim,
  thinkSpans,
  outsideThinks,
  THINK_REWRITE_INSTRUCTIONS,
  rewriteThinks,
  ndcgJudgeDisagreements,
  failureCauses,
  hallucinationShare,
  funnelStages,
  episodeEvents,
  runEvent,
  type EpisodeSummary,
  type PromptStats,
  type BucketAssignment,
  type DifficultyBucket,
  type Verdict,
  type VerificationLabel,
  type VerificationCandidate,
  type FocusedRound,
  type SftRow,
  type SftMessage,
  type RewriteCheck,
  type RewriteReport,
  type UnifiedEvent,
  type RoundBudget,
} from './core/curation/index';

// Streaming rewards
export {
  runStepPipeline,
  DEFAULT_PIPELINE_LIMITS,
  DEFAULT_PIPELINE_DEADLINES,
  type PipelineStages,
  type StageContext,
  type PipelineLimits,
  type PipelineDeadlines,
  type PipelineMode,
  type StepPipelineOptions,
  type StepResult,
  type GroupResult,
  type SampleResult,
  type PipelineMetrics,
} from './core/pipeline/step-pipeline';
export { createEpisodeStages, type EpisodeGroup, type EpisodeSample } from './core/pipeline/episode-stages';
export { createSystemClock } from './core/concurrency/clock';

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
  IcdScorer,
  IcdScore,
  IcdQuery,
  IcdDemonstration,
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
  PageImage,
  SearchHit,
  Evidence,
  TokenUsage,
  BoundingBox,
  TokenStep,
  Tokenizer,
} from './ports/index';
