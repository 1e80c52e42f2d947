import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/gemini needs @google/genai (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [geminiModule] = await loadWithOptionalPackages(
  'searcher-rl/gemini',
  [{ name: '@google/genai', install: 'npm install @google/genai@^2' }],
  () => Promise.all([import('./gemini')]),
);

/** The frozen Generator on Gemini: answers from the evidence images. */
export const createGeminiGenerator = geminiModule.createGeminiGenerator;
/** The LLM judge on Gemini, with structured output `{score}` (docs/method.md#judge). */
export const createGeminiJudge = geminiModule.createGeminiJudge;
export type { GeminiSettings } from './gemini';
