import { describe, expect, it } from 'vitest';
import type { Trajectory } from '../core/trajectory/trajectory';
import type { PromptRecord } from '../core/types';
import { describeEval, summarise } from './evaluate';

const question = (uid: string): PromptRecord => ({ uid, question: `q ${uid}`, reference: 'x' });

/** An episode scored `judge` (reward and detail), or whose reward failed (`null`: no reward, no detail). */
const episode = (uid: string, judge: number | null): Trajectory =>
  ({
    promptUid: uid,
    reference: 'x',
    finalAnswer: judge === 1 ? 'x' : '',
    terminated: 'complete',
    turns: [{ text: '<search>q</search>', observation: '' }],
    reward: judge,
    rewardDetail:
      judge === null
        ? null
        : { status: 'ok', components: { judgeScore: judge, ndcg: 1, formatPassed: true } },
  }) as unknown as Trajectory;

describe('an evaluation summary', () => {
  it('leaves a failed reward out of every figure and counts it, never as a wrong answer', () => {
    const questions = ['a', 'b', 'c', 'd'].map(question);
    const summary = summarise('test', questions, [
      episode('a', 1),
      episode('b', 0),
      episode('c', null),
      episode('d', null),
    ]);
    expect(summary.questions).toBe(4);
    expect(summary.failedRewards).toBe(2);
    expect(summary.judgeSuccess).toBe(0.5);
    expect(summary.judgeScoreMean).toBe(0.5);
    expect(summary.ndcg).toBe(1);
    expect(describeEval(summary)).toMatch(/judge success 50\.0%.*; 2 of 4 rewards failed .* left out$/);
    // Answer mode (exact match of the policy's own answer) masks the same way.
    const answered = summarise('test', questions, [episode('a', 1), episode('c', null)], 'search-r1');
    expect([answered.judgeSuccess, answered.failedRewards]).toEqual([1, 1]);
  });

  it('says nothing of failures when every reward came back', () => {
    const summary = summarise('test', [question('a')], [episode('a', 0)]);
    expect(summary.failedRewards).toBe(0);
    expect(describeEval(summary)).not.toMatch(/failed/);
  });
});
