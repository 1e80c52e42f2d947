export { createGeminiGenerator, createGeminiJudge, type GeminiSettings } from './gemini';
