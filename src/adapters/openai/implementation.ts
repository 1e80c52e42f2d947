// Everything of this subpath that needs its optional packages; index.ts loads it, or says what to install.
export { createOpenAIGenerator, createOpenAIJudge, type OpenAISettings } from './openai';
export { createOpenAIEmbedder, type OpenAIEmbedderSettings } from './embedder';
