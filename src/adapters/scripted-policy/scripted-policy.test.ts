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
