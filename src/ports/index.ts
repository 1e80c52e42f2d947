export type { CallOptions, SetupCheck } from './common';
export type { Clock } from './clock';
export type { SearchEngine, SearchOptions } from './search-engine';
export type { Generator, GeneratorAnswer } from './generator';
export type { Judge, JudgeVerdict } from './judge';
export type { ImageOps, CropOptions } from './image-ops';
export type { Embedder, EmbeddingInput } from './embedder';
export type { IcdScorer, IcdScore, IcdQuery, IcdDemonstration } from './icd-scorer';
export type { Store, StoreRecord, StoreRecordKind, StoreQuery } from './store';
export type {
  Tracker,
  TrackerParamValue,
  TrackerScalars,
  TrackerStart,
  TrackerResume,
  TrackerRunStatus,
} from './tracker';
export type {
  PolicyBackend,
  ChatFormat,
  RolloutSession,
  AppendOptions,
  GenerateTurnOptions,
  TurnOutput,
  LogProbBatch,
  LossFunction,
  UpdateResult,
  UpdateOptions,
  PolicyCheckpoint,
  PolicyDescription,
  OptimizerResetSettings,
} from './policy-backend';
export type { BoundingBox, PageImage, SearchHit, Evidence, TokenUsage, TokenStep, Tokenizer } from './types';
