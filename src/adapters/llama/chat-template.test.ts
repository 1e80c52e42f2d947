import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createChatTemplate } from './chat-template';
import { refusal } from './__fixtures__/gguf-writer';

// SmolLM2-135M-Instruct's template as its GGUF carries it, and transformers' apply_chat_template
// renders of it (__fixtures__/smollm2-q4_1.json).
const reference = JSON.parse(
  readFileSync(new URL('./__fixtures__/smollm2-q4_1.json', import.meta.url), 'utf8'),
) as {
  chatTemplate: string;
  chatRenders: Array<{
    messages: Array<{ role: string; content: string }>;
    addGenerationPrompt: boolean;
    text: string;
  }>;
};

describe('createChatTemplate', () => {
  const smol = createChatTemplate(reference.chatTemplate, {
    bos_token: '<|im_start|>',
    eos_token: '<|im_end|>',
  });

  it("renders SmolLM2's ChatML with a generation prompt exactly", () => {
    const text = smol.render(
      [
        { role: 'system', content: 'You answer with one word.' },
        { role: 'user', content: 'Capital of France?' },
      ],
      { addGenerationPrompt: true },
    );
    expect(text).toBe(
      '<|im_start|>system\nYou answer with one word.<|im_end|>\n<|im_start|>user\nCapital of France?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it("matches transformers' apply_chat_template, the default system turn included", () => {
    for (const { messages, addGenerationPrompt, text } of reference.chatRenders)
      expect(smol.render(messages, { addGenerationPrompt })).toBe(text);
    expect(smol.render([{ role: 'user', content: 'hi' }])).toBe(
      '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n',
    );
  });

  it('gives the template the special tokens', () => {
    const chat = createChatTemplate(
      '{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}',
      {
        bos_token: '<s>',
        eos_token: '</s>',
      },
    );
    expect(chat.render([{ role: 'user', content: 'a' }])).toBe('<s>a</s>');
  });

  it("strips block lines as transformers' Jinja environment does (trim_blocks, lstrip_blocks)", () => {
    const chat = createChatTemplate(
      '{% for m in messages %}\n  {% if true %}\n[{{ m.content }}]\n  {% endif %}\n{% endfor %}',
      {},
    );
    expect(chat.render([{ role: 'user', content: 'a' }])).toBe('[a]\n');
  });

  it("refuses a template that does not parse, naming 'chat_template'", () => {
    const error = refusal(() => createChatTemplate('{% for m in messages %}{{ m.content }', {}));
    expect(error.argument).toBe('chat_template');
  });

  it("turns the template's raise_exception into a refusal that carries its message", () => {
    const chat = createChatTemplate(
      "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversations must start with a user turn') }}{% endif %}",
      {},
    );
    const error = refusal(() => chat.render([{ role: 'assistant', content: 'x' }]));
    expect(error.argument).toBe('chat_template');
    expect(error.message).toContain('Conversations must start with a user turn');
  });
});
