export {
  DEFAULT_CURATION_SETTINGS,
  FOCUSED_ROUND_BUDGETS,
  type CurationSettings,
  type RoundBudget,
} from './settings';
export {
  summariseTrajectory,
  promptStats,
  answerScoreOf,
  searchR1AnswerScore,
  type EpisodeSummary,
  type PromptStats,
  type RewardSchemeName,
} from './episodes';
export {
  bucketOf,
  assignBuckets,
  countBuckets,
  type DifficultyBucket,
  type BucketAssignment,
} from './buckets';
export {
  VERIFICATION_LABELS,
  EXCLUDING_LABELS,
  verificationCandidates,
  bucketZeroCandidates,
  labelCandidate,
  labelGoldenReview,
  parseVerificationLabel,
  excludedPrompts,
  type VerificationLabel,
  type VerificationCandidate,
  type CandidateReason,
  type Verdict,
} from './verification';
export { verifyCandidates, type VerifyOptions } from './verify';
export { buildRound1, buildRound2, buildRound3, type FocusedRound } from './rounds';
export {
  selectRareSuccesses,
  compareForDistillation,
  sftRowFromTrajectory,
  thinkActionTagTurns,
  dropThinkActionTagRows,
  SFT_FORMAT_VERSION,
  type DistillOptions,
  type DistillSelection,
  type SftRow,
  type SftMessage,
} from './distill';
export {
  OBSERVATION_CLAIM_PATTERNS,
  checkThinkRewrite,
  hasObservationClaim,
  thinkSpans,
  outsideThinks,
  THINK_REWRITE_INSTRUCTIONS,
  type RewriteCheck,
  type RewriteRejection,
} from './think-rewrite';
export { rewriteThinks, type RewriteReport } from './rewrite';
export {
  ndcgJudgeDisagreements,
  failureCauses,
  hallucinationShare,
  funnelStages,
  type DisagreementAnalysis,
  type FailureCauses,
  type FunnelStage,
} from './analyses';
