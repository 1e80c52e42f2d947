import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/gemini needs @google/genai (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/gemini', [{ name: "@google/genai", install: "npm install @google/genai@^2" }], () => import('./implementation'));

export const createGeminiGenerator = implementation.createGeminiGenerator;
export const createGeminiJudge = implementation.createGeminiJudge;
export type { GeminiSettings } from './implementation';
