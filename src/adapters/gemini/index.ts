import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/gemini needs @google/genai (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [geminiModule] = await loadWithOptionalPackages(
  'searcher-rl/gemini',
  [{ name: '@google/genai', install: 'npm install @google/genai@^2' }],
  () => Promise.all([import('./gemini')]),
);

export const createGeminiGenerator = geminiModule.createGeminiGenerator;
export const createGeminiJudge = geminiModule.createGeminiJudge;
export type { GeminiSettings } from './gemini';
