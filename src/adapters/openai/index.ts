export { createOpenAIGenerator, createOpenAIJudge, type OpenAISettings } from './openai';
