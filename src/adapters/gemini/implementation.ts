// Everything of this subpath that needs its optional packages; index.ts loads it, or says what to install.
export { createGeminiGenerator, createGeminiJudge, type GeminiSettings } from './gemini';
