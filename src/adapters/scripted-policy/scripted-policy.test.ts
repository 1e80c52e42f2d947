import { describe, expect, it } from 'vitest';
import { createScriptedPolicy } from './index';

describe('createScriptedPolicy', () => {
  it('stops after the first closing action tag and truncates at maxTokens', async () => {
    const policy = createScriptedPolicy({ script: ['<search>a</search> trailing <search>b</search>'] });
    const session = await policy.begin([[1, 2, 3]]);
    const [out] = await session.generateTurn([0], {
      stopAfter: ['</search>'],
      maxTokens: 100,
      temperature: 1,
      topP: 1,
    });
    expect(policy.tokenizer.decode(out!.steps.map((s) => s.tokenId))).toBe('<search>a</search>');
    expect(out!.finishReason).toBe('stop');
    expect(out!.steps[0]!.position).toBe(3);
    const [cut] = await session.generateTurn([0], {
      stopAfter: ['</search>'],
      maxTokens: 2,
      temperature: 1,
      topP: 1,
    });
    expect(cut!.steps).toHaveLength(2);
    expect(cut!.finishReason).toBe('length');
    expect(cut!.steps[0]!.position).toBe(3 + out!.steps.length);
  });
  it('evaluates the loss on update and records it, without claiming to train', async () => {
    const policy = createScriptedPolicy({ script: ['x'], logProb: -0.5 });
    const result = await policy.update({ inputIds: [[1, 2, 3]], positions: [[1, 2]] }, (newLogProbs) => ({
      value: newLogProbs[0]![0]!,
      gradNewLogProbs: [[3, 4]],
    }));
    expect(result).toMatchObject({ value: -0.5, gradNorm: 5, applied: false });
    expect(policy.trainable).toBe(false);
    expect(policy.calls.update[0]!.gradNewLogProbs).toEqual([[3, 4]]);
  });
  it('rejects an empty script naming it', () => {
    expect(() => createScriptedPolicy({ script: [] })).toThrow(/'script'/);
  });
});

describe('createScriptedPolicy with a chat format', () => {
  it("demonstrates in the chat model's template: the episode wraps its prompt and observations", async () => {
    const { createSearcher } = await import('../../searcher');
    const { createMockGenerator, createMockSearchEngine } = await import('../mock/index');
    const { createRuleJudge } = await import('../rule-judge/index');
    const chatFormat = {
      prompt: (text: string) => `<|user|>${text}<|assistant|>`,
      observation: (text: string) => `<|end|><|user|>${text}<|assistant|>`,
    };
    const policy = createScriptedPolicy({
      script: ['<search>acme</search>', '<search_complete>true</search_complete>'],
      chatFormat,
    });
    expect(policy.chatFormat).toBe(chatFormat);
    const searcher = createSearcher({
      policy,
      searchEngine: createMockSearchEngine({ pages: [{ basename: 'a.png', text: 'Acme revenue 4.5' }] }),
      generator: createMockGenerator(),
      judge: createRuleJudge(),
    });
    const batch = await searcher.collect(
      [{ uid: 'q', question: 'What was Acme revenue?', reference: '4.5' }],
      { nAgent: 1 },
    );
    const t = batch.episodes[0]!.trajectory;
    const text = policy.tokenizer.decode(t.fullInputIds);
    expect(text.startsWith('<|user|>')).toBe(true);
    expect(text).toMatch(
      /<search>acme<\/search><\|end\|><\|user\|><information>[\s\S]*<\|assistant\|><search_complete>/,
    );
  });
});
