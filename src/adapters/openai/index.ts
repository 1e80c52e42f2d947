import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/openai needs openai (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/openai', [{ name: "openai", install: "npm install openai@^6" }], () => import('./implementation'));

export const createOpenAIGenerator = implementation.createOpenAIGenerator;
export const createOpenAIJudge = implementation.createOpenAIJudge;
export const createOpenAIEmbedder = implementation.createOpenAIEmbedder;
export type { OpenAISettings, OpenAIEmbedderSettings } from './implementation';
