import { adaptersFromEntry } from '../../provider-utils/adapter-definition';
import { openaiSettingsSchema } from './settings';

// The entry (and with it the SDK) is loaded by `create` only: naming these definitions loads no openai.
const fromOpenAIEntry = adaptersFromEntry({ packages: ['openai'], load: () => import('./index') });

/** `adapters.generator: {type: 'openai', model, ...}`: the frozen Generator on the OpenAI Responses API. */
export const openaiGeneratorAdapter = fromOpenAIEntry({
  port: 'generator',
  type: 'openai',
  settings: openaiSettingsSchema,
  create: (entry, settings) => entry.createOpenAIGenerator(settings),
});

/** `adapters.judge: {type: 'openai', model, ...}`: the LLM judge on the OpenAI Responses API. */
export const openaiJudgeAdapter = fromOpenAIEntry({
  port: 'judge',
  type: 'openai',
  settings: openaiSettingsSchema,
  create: (entry, settings) => entry.createOpenAIJudge(settings),
});
