import { describe, expect, it } from 'vitest';
import { createMockGenerator, createMockSearchEngine } from '../../adapters/mock/index';
import { createRuleJudge } from '../../adapters/rule-judge/index';
import { createScriptedPolicy } from '../../adapters/scripted-policy/index';
import { runEpisodes } from '../episode/run-episodes';
import { completeWithGenerator } from '../episode/terminal-answer';
import type { PromptRecord } from '../types';
import { REWARD_PRESETS } from './combine';
import { formatPassed, scoreTrajectory } from './score';

const prompt: PromptRecord = {
  uid: 'q',
  question: 'Acme revenue 2019?',
  reference: '4.5 billion dollars',
  goldenBasenames: ['a.png'],
};
const pages = [{ basename: 'a.png', text: 'Acme revenue 2019 4.5 billion dollars' }];

async function episode(
  script: string[],
  options: { searchFails?: boolean; mode?: 'searcher' | 'answer'; generatorFails?: boolean } = {},
) {
  const policy = createScriptedPolicy({ script });
  const engine = createMockSearchEngine({
    pages,
    failWith: () => (options.searchFails ? new Error('index offline') : undefined),
  });
  const [e] = await runEpisodes(
    [{ prompt, groupId: 'g', rolloutIndex: 0 }],
    { policy, searchEngine: engine },
    { config: { mode: options.mode ?? 'searcher' } },
  );
  if ((options.mode ?? 'searcher') === 'searcher') {
    return (
      await completeWithGenerator(
        e!,
        createMockGenerator({
          facts: { 'a.png': '4.5 billion dollars' },
          failWith: () => (options.generatorFails ? new Error('quota') : undefined),
        }),
        { policy },
      )
    ).trajectory;
  }
  return e!.trajectory;
}

describe('scoreTrajectory', () => {
  it('scores judge, NDCG and the gate', async () => {
    const t = await episode(['<search>acme revenue</search>', '<search_complete>true</search_complete>']);
    expect(formatPassed(t)).toBe(true);
    expect(await scoreTrajectory(t, { scheme: 'searcher', judge: createRuleJudge() })).toMatchObject({
      status: 'ok',
      value: 1,
      components: { judgeScore: 1, ndcg: 1 },
    });
  });

  it('does not ask the judge when the format gate fails', async () => {
    const t = await episode(['no tags', '<search_complete>true</search_complete>']);
    const judge = createRuleJudge();
    expect(await scoreTrajectory(t, { scheme: 'searcher', judge })).toMatchObject({ status: 'ok', value: 0 });
    expect(judge.calls).toHaveLength(0);
  });

  it('makes a provider failure during the episode a missing reward under either scheme', async () => {
    const searcher = await episode(['<search>acme</search>'], { searchFails: true });
    expect(await scoreTrajectory(searcher, { scheme: 'searcher', judge: createRuleJudge() })).toMatchObject({
      status: 'missing',
      cause: { stage: 'episode' },
    });
    const r1 = await episode(['<search>acme</search>'], { searchFails: true, mode: 'answer' });
    expect(await scoreTrajectory(r1, { scheme: 'search-r1' })).toMatchObject({
      status: 'missing',
      cause: { stage: 'episode', message: expect.stringMatching(/index offline/) },
    });
  });

  it('needs the generator only when the judge reads its answer', async () => {
    const t = await episode(['<search>acme revenue</search>', '<search_complete>true</search_complete>'], {
      generatorFails: true,
    });
    expect(await scoreTrajectory(t, { scheme: 'searcher', judge: createRuleJudge() })).toMatchObject({
      status: 'missing',
      cause: { stage: 'generator' },
    });
    // Phase 1 has no judge: the reward is 0.1 + 0.9 NDCG whatever the generator did.
    expect(await scoreTrajectory(t, { scheme: 'searcher', weights: REWARD_PRESETS.phase1 })).toMatchObject({
      status: 'ok',
      value: 1,
    });
  });

  it('scores Search-R1 mode with its format and answer checks (docs/method.md#search-r1-reward)', async () => {
    const t = await episode(['<search>acme</search>', '<answer>4.5 billion dollars</answer>'], {
      mode: 'answer',
    });
    expect(await scoreTrajectory(t, { scheme: 'search-r1' })).toMatchObject({ status: 'ok', value: 2.5 });
  });

  it("scores Search-R1's exact-match reward: 1 for the reference after SQuAD's normalisation, else 0, whatever the format", async () => {
    const exact = { scheme: 'search-r1', searchR1Reward: 'exact-match' } as const;
    const cases: Array<[string[], number, number]> = [
      // [policy turns, the format-and-answer reward, Search-R1's exact match]
      [['<search>acme</search>', '<answer>The 4.5 billion dollars.</answer>'], 1.5, 1],
      [['<search>acme</search>', '<answer>4.5 billion</answer>'], 1.5, 0],
      [['<answer>4.5 billion dollars</answer>'], 2.5, 1],
      [['<answer>未找到相关内容</answer>'], 1, 0],
    ];
    for (const [turns, formatAnswer, exactMatch] of cases) {
      const t = await episode(turns, { mode: 'answer' });
      expect(await scoreTrajectory(t, { scheme: 'search-r1' }), turns.join(' ')).toMatchObject({
        status: 'ok',
        value: formatAnswer,
      });
      const scored = await scoreTrajectory(t, exact);
      expect(scored, turns.join(' ')).toMatchObject({ status: 'ok', value: exactMatch });
      expect(scored.components.formatPassed).toBe(true);
    }
    // Several accepted answers (Natural Questions' golden_answers): any of them is exact; under the
    // format-and-answer reward the answer check is the best over them.
    const aliased = {
      ...(await episode(['<search>acme</search>', '<answer>four and a half billion</answer>'], {
        mode: 'answer',
      })),
      reference: '4.5 billion dollars | four and a half billion',
      answers: ['4.5 billion dollars', 'Four and a half billion'],
    };
    expect(await scoreTrajectory(aliased, exact)).toMatchObject({ status: 'ok', value: 1 });
    expect(await scoreTrajectory(aliased, { scheme: 'search-r1' })).toMatchObject({
      status: 'ok',
      value: 1.5,
    });
    expect(await scoreTrajectory({ ...aliased, reference: null }, exact)).toMatchObject({
      status: 'ok',
      value: 1,
    });
    expect(await scoreTrajectory({ ...aliased, answers: ['4.5 billion dollars'] }, exact)).toMatchObject({
      value: 0,
    });
    const unreferenced = { ...(await episode(['<answer>x</answer>'], { mode: 'answer' })), reference: null };
    expect(await scoreTrajectory(unreferenced, exact)).toMatchObject({
      status: 'missing',
      cause: { stage: 'judge' },
    });
  });
});
