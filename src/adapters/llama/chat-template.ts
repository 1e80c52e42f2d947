import { Template } from '@huggingface/jinja';
import { InvalidArgumentError } from '../../core/errors';

export interface ChatMessage {
  role: string;
  content: string;
}

export interface ChatTemplate {
  /** The prompt text for `messages`; `addGenerationPrompt` opens the assistant's turn. */
  render(messages: readonly ChatMessage[], options?: { addGenerationPrompt?: boolean }): string;
}

function templateError(message: string, cause: unknown): InvalidArgumentError {
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new InvalidArgumentError({ argument: 'chat_template', message: `${message}: ${reason}`, cause });
}

/**
 * A model's chat template (tokenizer_config.json's or a GGUF's tokenizer.chat_template) rendered
 * as transformers' `apply_chat_template` renders it: @huggingface/jinja strips blocks as
 * transformers' Jinja environment does (trim_blocks, lstrip_blocks), and the template sees the
 * same names: `messages`, `add_generation_prompt`, the special tokens, and the library's own
 * `raise_exception` (how templates refuse a conversation they cannot format; it becomes the
 * refusal here) and `strftime_now`.
 */
export function createChatTemplate(
  template: string,
  specialTokens: { bos_token?: string; eos_token?: string },
): ChatTemplate {
  let compiled: Template;
  try {
    compiled = new Template(template);
  } catch (error) {
    throw templateError('the template does not parse', error);
  }
  return {
    render(messages, options = {}) {
      try {
        return compiled.render({
          messages: messages.map((message) => ({ role: message.role, content: message.content })),
          add_generation_prompt: options.addGenerationPrompt ?? false,
          bos_token: specialTokens.bos_token ?? '',
          eos_token: specialTokens.eos_token ?? '',
        });
      } catch (error) {
        throw templateError('rendering the messages failed', error);
      }
    },
  };
}
