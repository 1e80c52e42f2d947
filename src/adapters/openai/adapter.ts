import { defineAdapter } from '../../provider-utils/adapter-definition';
import { openaiSettingsSchema } from './settings';

// The SDK is loaded by `create` only (a dynamic import of the adapter's entry): naming these loads no `openai`.

/** `adapters.generator: {type: 'openai', model, ...}`: the frozen Generator on the OpenAI Responses API. */
export const openaiGeneratorAdapter = defineAdapter({
  port: 'generator',
  type: 'openai',
  settings: openaiSettingsSchema,
  packages: ['openai'],
  create: (settings) => import('./index').then((m) => m.createOpenAIGenerator(settings)),
});

/** `adapters.judge: {type: 'openai', model, ...}`: the LLM judge on the OpenAI Responses API. */
export const openaiJudgeAdapter = defineAdapter({
  port: 'judge',
  type: 'openai',
  settings: openaiSettingsSchema,
  packages: ['openai'],
  create: (settings) => import('./index').then((m) => m.createOpenAIJudge(settings)),
});
