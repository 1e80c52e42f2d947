import { defineAdapter } from '../../provider-utils/adapter-definition';
import { geminiSettingsSchema } from './settings';

// The SDK is loaded by `create` only (a dynamic import of the adapter's entry): naming these loads no `@google/genai`.

/** `adapters.generator: {type: 'gemini', model, ...}`: the frozen Generator on Gemini. */
export const geminiGeneratorAdapter = defineAdapter({
  port: 'generator',
  type: 'gemini',
  settings: geminiSettingsSchema,
  packages: ['@google/genai'],
  create: (settings) => import('./index').then((m) => m.createGeminiGenerator(settings)),
});

/** `adapters.judge: {type: 'gemini', model, ...}`: the LLM judge on Gemini. */
export const geminiJudgeAdapter = defineAdapter({
  port: 'judge',
  type: 'gemini',
  settings: geminiSettingsSchema,
  packages: ['@google/genai'],
  create: (settings) => import('./index').then((m) => m.createGeminiJudge(settings)),
});
