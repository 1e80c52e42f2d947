// For adapter authors: what an adapter of a remote service needs besides its vendor SDK.
export { loadApiKey } from './api-key';
export { parseSettings, issueFields } from './settings';
export { parseRetryAfter, retryDelayFromBody, type HeadersLike } from './retry-after';
export { redactSecrets, headerSecrets } from './redact';
export { toProviderError, type VendorFailure } from './vendor-error';
export { evidenceParts, type EvidencePart } from './evidence';
export { GENERATOR_INSTRUCTIONS, JUDGE_INSTRUCTIONS, judgePrompt, parseJudgeScore } from './judge';
export { isConnectionError } from '../core/calls/failures';
export { DEFAULT_CALL_POLICY, type CallPolicy } from '../core/calls/call-policy';
export { createReliableCaller, type ReliableCaller, type ReliableCallOptions, type ReliabilityDeps } from '../core/calls/reliable-call';
export { maxTokensAt } from '../core/episode/token-budget';
export { loadWithOptionalPackages, type OptionalPackage } from './optional-package';
export { sampleToken, type SamplingOptions } from './sampling';
export { createTurnStop, type TurnStop } from './turn-stop';
export { createRolloutScheduler, type RolloutScheduler, type RolloutBackend, type ScheduledRow } from './rollout-scheduler';
export { emptyKvCache, growKvCache, gatherKvCache, scatterKvCache, type KvCacheRow, type KvCacheShape } from './kv-cache';
