export {
  DEFAULT_ICD_SETTINGS,
  ICD_GEN_METHODS,
  type IcdGenMethod,
  type IcdQueryRecord,
  type IcdTrajectory,
  type IcdSettings,
} from './types';
export { localToGlobal, globalToLocal, pointerToGlobal, validateIcdRecords } from './index-maps';
export {
  createEmbeddingTable,
  embeddingRow,
  l2Normalise,
  similarities,
  topK,
  type EmbeddingTable,
} from './embeddings';
export { parseIcdRecords, parseIcdText, formatIcdJsonl, type IcdParseOptions } from './parse';
export { parseIcdVectorsText } from './vectors-text';
export {
  normaliseIcdPools,
  gatherPoolEmbeddings,
  type NormaliseOptions,
  type NormaliseReport,
} from './normalise';
export { createIcdDatasetView, type IcdDatasetItem, type IcdDatasetView } from './dataset-view';
export { vqaSoftAccuracy, normaliseVqaAnswer, isVqaCorrect } from './vqa-accuracy';
export { createIcdScoreCall, type IcdScoreCall } from './scoring';
export { GlobalPositiveMiner, type GlobalPositiveMinerOptions, type MinedPositive } from './miner';
export { CandidatePoolInjector, type InjectionResult, type InjectionReplacement } from './injector';
export {
  poolOracle,
  summariseOracle,
  storedOracleAtK,
  storedQueryOracle,
  type PoolOracle,
  type OracleSummary,
} from './oracle';
export {
  beamSearchDemonstrations,
  type IcdBeam,
  type IcdBeamSearchOptions,
  type IcdBeamSearchResult,
} from './beam-search';
export {
  TrajectoryQualityController,
  type FinalTrajectories,
  type TrajectoryQualityOptions,
} from './controller';
export { selectorGrpoLoss, type SelectorGrpoInput, type SelectorGrpoResult } from './selector-grpo';
export { demonstrationsFromDistilled } from './from-distillation';
