import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/openai needs openai (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [openaiModule, embedderModule] = await loadWithOptionalPackages(
  'searcher-rl/openai',
  [{ name: 'openai', install: 'npm install openai@^6' }],
  () => Promise.all([import('./openai'), import('./embedder')]),
);

export const createOpenAIGenerator = openaiModule.createOpenAIGenerator;
export const createOpenAIJudge = openaiModule.createOpenAIJudge;
export const createOpenAIEmbedder = embedderModule.createOpenAIEmbedder;
export type { OpenAISettings } from './openai';
export type { OpenAIEmbedderSettings } from './embedder';
