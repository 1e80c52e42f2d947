export { createOpenAIGenerator, createOpenAIJudge, type OpenAISettings } from './openai';
export { createOpenAIEmbedder, type OpenAIEmbedderSettings } from './embedder';
