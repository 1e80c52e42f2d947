import { describe, expect, it } from 'vitest';
import { createMockGenerator } from '../mock/index';
import { createHashedEmbedder } from './hashed-embedder';
import { createIcdDemo, createOfflineIcdScorer } from './demo';
import { createGeneratorIcdScorer, icdPrompt } from './generator-scorer';

describe('createHashedEmbedder', () => {
  it('is deterministic, L2-normalised, and puts shared words close', async () => {
    const embedder = createHashedEmbedder({ dimensions: 64 });
    const [a, b, c] = await embedder.doEmbed([
      { kind: 'text', text: 'river boat fish' },
      { kind: 'text', text: 'river boat fish fish' },
      { kind: 'text', text: 'cloud rain storm' },
    ]);
    const dot = (x: number[], y: number[]) => x.reduce((s, v, i) => s + v * y[i]!, 0);
    expect(dot(a!, a!)).toBeCloseTo(1);
    expect(dot(a!, b!)).toBeGreaterThan(0.9);
    expect(Math.abs(dot(a!, c!))).toBeLessThan(0.5);
    expect(await embedder.doEmbed([{ kind: 'text', text: 'river boat fish' }])).toEqual([a]);
  });
});

describe('the offline ICD model', () => {
  it("answers from the demonstrations: the first one of the query's task sets the format, none gives 0", async () => {
    const demo = createIcdDemo({ seed: 1, queries: 20 });
    const scorer = createOfflineIcdScorer();
    const query = demo.queries[0]!;
    const task = demo.queryTasks[0]!;
    const perCell = 4;
    const demoOf = (t: number, style: number) => demo.demonstrations[(t * 6 * 3 + style) * perCell]!;
    const preferred = task % 3;
    const other = (task + 1) % demo.taskCount;
    expect((await scorer.doScore(query, [demoOf(other, 0), demoOf(other, 1)])).accuracy).toBe(0);
    expect((await scorer.doScore(query, [demoOf(other, 0), demoOf(task, preferred)])).accuracy).toBe(1);
    expect(
      (await scorer.doScore(query, [demoOf(task, (preferred + 1) % 3), demoOf(task, preferred)])).accuracy,
    ).toBe(0.6);
    expect((await scorer.doScore(query, [demoOf(task, (preferred + 2) % 3)])).accuracy).toBe(0.3);
  });

  it('works over any Generator: the demonstrations go in the prompt, the answer is graded', async () => {
    const generator = createMockGenerator({ answer: 'Answer: 7 units' });
    const scorer = createGeneratorIcdScorer(generator);
    const query = { id: 1, question: 'sum 3 and 4', answers: ['7 units', '7 units', '7 units', '7'] };
    const prompt = icdPrompt(query, [{ index: 0, question: 'add 1 and 2', answer: '3 units' }]);
    expect(prompt).toBe(
      'Example 1:\nQuestion: add 1 and 2\nAnswer: 3 units\n\nNow answer:\nQuestion: sum 3 and 4\nAnswer:',
    );
    const score = await scorer.doScore(query, []);
    expect(score.answer).toBe('7 units');
    // 3 matches of 4: (3 x 2/3 + 1) / 4 over the leave-one-out subsets.
    expect(score.accuracy).toBe(0.75);
  });
});
