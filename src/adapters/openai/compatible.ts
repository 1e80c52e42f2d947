import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/openai-compatible needs openai (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [policyModule] = await loadWithOptionalPackages(
  'searcher-rl/openai-compatible',
  [{ name: 'openai', install: 'npm install openai@^6' }],
  () => Promise.all([import('./compatible-policy')]),
);

/**
 * A rollouts-only Searcher policy served by an OpenAI-compatible server (vLLM), with the token ids
 * and log-probs the server sampled.
 */
export const createOpenAICompatiblePolicy = policyModule.createOpenAICompatiblePolicy;
/** The policy's raw `/v1/completions` client: one attempt per call. */
export const createOpenAICompatibleCompletions = policyModule.createOpenAICompatibleCompletions;
export type {
  OpenAICompatibleSettings,
  CompletionsClient,
  CompletionRequest,
  CompletionChoice,
} from './compatible-policy';
