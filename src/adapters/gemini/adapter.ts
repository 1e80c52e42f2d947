import { adaptersFromEntry } from '../../provider-utils/adapter-definition';
import { geminiSettingsSchema } from './settings';

// The entry (and with it the SDK) is loaded by `create` only: naming these definitions loads no @google/genai.
const fromGeminiEntry = adaptersFromEntry({ packages: ['@google/genai'], load: () => import('./index') });

/** `adapters.generator: {type: 'gemini', model, ...}`: the frozen Generator on Gemini. */
export const geminiGeneratorAdapter = fromGeminiEntry({
  port: 'generator',
  type: 'gemini',
  settings: geminiSettingsSchema,
  create: (entry, settings) => entry.createGeminiGenerator(settings),
});

/** `adapters.judge: {type: 'gemini', model, ...}`: the LLM judge on Gemini. */
export const geminiJudgeAdapter = fromGeminiEntry({
  port: 'judge',
  type: 'gemini',
  settings: geminiSettingsSchema,
  create: (entry, settings) => entry.createGeminiJudge(settings),
});
