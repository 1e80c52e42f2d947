import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/openai-compatible needs openai (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/openai-compatible', [{ name: "openai", install: "npm install openai@^6" }], () => import('./implementation'));

export const createOpenAICompatiblePolicy = implementation.createOpenAICompatiblePolicy;
export const createOpenAICompatibleCompletions = implementation.createOpenAICompatibleCompletions;
export type { OpenAICompatibleSettings, CompletionsClient, CompletionRequest, CompletionChoice } from './implementation';
