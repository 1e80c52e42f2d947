import { InvalidArgumentError } from '../../core/errors';
import type { ChatFormat } from '../../ports/policy-backend';
import { createChatTemplate } from './chat-template';
import type { DropoutMasks } from '../engines/llama/engine';

/**
 * Wrappers that put the Searcher's prompt and each observation into the model's own chat
 * template: the prompt as the first user message with the assistant's turn opened, an observation
 * as the assistant's turn closed, a user message, and the next assistant turn opened. Derived by
 * rendering the template around markers, so any template (ChatML, Llama 3's, Qwen's) gives its own.
 */
export function chatFormatOf(
  template: string,
  specialTokens: { bos_token?: string; eos_token?: string },
): ChatFormat {
  const chat = createChatTemplate(template, specialTokens);
  const [Q, A, O] = ['\u27e6question\u27e7', '\u27e6answer\u27e7', '\u27e6observation\u27e7'];
  const prompt = chat.render([{ role: 'user', content: Q }], { addGenerationPrompt: true });
  const turn = chat.render(
    [
      { role: 'user', content: Q },
      { role: 'assistant', content: A },
      { role: 'user', content: O },
    ],
    { addGenerationPrompt: true },
  );
  const [promptBefore, promptAfter] = prompt.split(Q) as [string, string];
  const afterAnswer = turn.slice(turn.indexOf(A) + A.length);
  const [observationBefore, observationAfter] = afterAnswer.split(O) as [string, string];
  if (promptAfter === undefined || observationAfter === undefined)
    throw new InvalidArgumentError({
      argument: 'chat_template',
      message: "does not render a user message's content once",
    });
  return {
    prompt: (text) => `${promptBefore}${text}${promptAfter}`,
    observation: (text) => `${observationBefore}${text}${observationAfter}`,
  };
}

/** LoRA dropout masks for one chunk: each entry 0 (dropped) or 1 / (1 - rate), [tokens, in] per adapted projection. */
export function dropoutMasks(
  names: readonly string[],
  inDims: Map<string, number>,
  tokens: number,
  rate: number,
  random: { nextFloat(): number },
): DropoutMasks {
  const masks: DropoutMasks = {};
  const keep = 1 / (1 - rate);
  for (const name of names) {
    const mask = new Float32Array(tokens * inDims.get(name)!);
    for (let i = 0; i < mask.length; i++) mask[i] = random.nextFloat() < rate ? 0 : keep;
    masks[name] = mask;
  }
  return masks;
}
