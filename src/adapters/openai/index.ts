import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/openai needs openai (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [openaiModule, embedderModule] = await loadWithOptionalPackages(
  'searcher-rl/openai',
  [{ name: 'openai', install: 'npm install openai@^6' }],
  () => Promise.all([import('./openai'), import('./embedder')]),
);

/** The frozen Generator on the OpenAI Responses API: answers from the evidence images. */
export const createOpenAIGenerator = openaiModule.createOpenAIGenerator;
/**
 * The LLM judge on the OpenAI Responses API, with structured output `{score}`
 * (docs/method.md#judge).
 */
export const createOpenAIJudge = openaiModule.createOpenAIJudge;
/**
 * The Embedder port on an OpenAI-compatible `/embeddings` endpoint (texts only; vectors
 * L2-normalised).
 */
export const createOpenAIEmbedder = embedderModule.createOpenAIEmbedder;
export type { OpenAISettings } from './openai';
export type { OpenAIEmbedderSettings } from './embedder';
