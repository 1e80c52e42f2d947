// Everything of this subpath that needs its optional packages; index.ts loads it, or says what to install.
export {
  createOpenAICompatiblePolicy,
  createOpenAICompatibleCompletions,
  type OpenAICompatibleSettings,
  type CompletionsClient,
  type CompletionRequest,
  type CompletionChoice,
} from './policy';
