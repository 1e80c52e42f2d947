// For adapter authors, plumbing only: keys, settings, Retry-After, redaction, the one vendor-error
// mapping, HTTP within its origin and a body cap, evidence as message parts, optional packages, an
// adapter's definition for the registry (`defineAdapter`). (The judge's prompt and strict score
// parsing are with the rewards, `src/core/reward/judge-prompt.ts`; the in-process rollout engine
// is `src/rollout-engine/`.)
export { loadApiKey } from './api-key';
export { parseSettings, issueFields } from './settings';
export { parseRetryAfter, retryDelayFromBody, type HeadersLike } from './retry-after';
export { redactSecrets, headerSecrets } from './redact';
export { registerSecret } from '../core/secrets';
export { toProviderError, type VendorFailure } from './vendor-error';
export {
  guardedFetch,
  readCapped,
  redirectTarget,
  responseTooLarge,
  type HttpCaller,
} from './http-guard';
export { evidenceParts, type EvidencePart } from './evidence';
export { loadWithOptionalPackages, requireOptionalPackages, type OptionalPackage } from './optional-package';
export {
  defineAdapter,
  adaptersFromEntry,
  ADAPTER_PORT_NAMES,
  type AdapterDefinition,
  type AdapterEntry,
  type EntryAdapterDeclaration,
  type AdapterContext,
  type AdapterPorts,
  type AdapterPortName,
  type AdapterSettingsSchema,
} from './adapter-definition';
export { lazyClient, type LazyClient } from './lazy-client';
