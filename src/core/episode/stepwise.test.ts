import { describe, expect, it } from 'vitest';
import {
  createMockGenerator,
  createMockSearchEngine,
  createRawImage,
  createRawImageOps,
} from '../../adapters/mock/index';
import { createScriptedPolicy } from '../../adapters/scripted-policy/index';
import { createRuleJudge } from '../../adapters/rule-judge/index';
import { createPortGateway, singleAttemptPolicies } from '../calls/gateway';
import { createProtocolTokenizer } from '../protocol/tokenizer';
import type { PromptRecord } from '../types';
import type { EpisodeInstance } from './instances';
import { runEpisodes } from './run-episodes';
import { beginStepwiseEpisode, scoreStepwiseEpisode, stepEpisode } from './stepwise';

const pages = [
  { basename: 'acme_1.png', text: 'Acme annual report 2019 overview', image: createRawImage(200, 100) },
  {
    basename: 'acme_2.png',
    text: 'Acme revenue 2019 was 4.5 billion dollars',
    image: createRawImage(200, 100),
  },
];
const prompt: PromptRecord = {
  uid: 'q1',
  question: 'What was Acme revenue in 2019?',
  reference: '4.5 billion dollars',
  goldenBasenames: ['acme_2.png'],
};
const instance: EpisodeInstance = { prompt, groupId: 'g', rolloutIndex: 0 };
const config = { maxTurns: 3 };

async function both(script: string[]) {
  const engine = createMockSearchEngine({ pages });
  const imageOps = createRawImageOps();
  const [inProcess] = await runEpisodes(
    [instance],
    { policy: createScriptedPolicy({ script }), searchEngine: engine, imageOps },
    { config },
  );
  const gateway = createPortGateway({ searchEngine: engine, imageOps }, singleAttemptPolicies());
  const episode = beginStepwiseEpisode(instance, { config, tokenizer: createProtocolTokenizer() });
  const observations = [];
  for (const text of script) {
    const observation = await stepEpisode(episode, text, gateway);
    observations.push(observation);
    if (observation.done) break;
  }
  return { inProcess: inProcess!.trajectory, episode, observations };
}

describe('the stepwise episode', () => {
  it.each([
    [
      'search then complete',
      [
        '<think>a</think>\n<search>acme revenue 2019</search>',
        '<think>b</think>\n<bbox>[0, 0, 100, 50]</bbox>',
        '<think>c</think>\n<search_complete>true</search_complete>',
      ],
    ],
    [
      'an invalid action, then the turn budget',
      [
        'no tags at all',
        '<think>a</think>\n<search>acme</search>',
        '<think>a</think>\n<search>acme</search>',
      ],
    ],
  ])('matches runEpisodes turn for turn: %s', async (_name, script) => {
    const { inProcess, episode, observations } = await both(script);
    expect(episode.state.done).toBe(true);
    expect(episode.state.terminated).toBe(inProcess.terminated);
    // The finish reason is the trainer's to report (a step carries text only).
    const withoutFinish = (turns: typeof inProcess.turns) =>
      turns.map(({ finishReason: _f, ...turn }) => turn);
    expect(withoutFinish(episode.state.turns)).toEqual(withoutFinish(inProcess.turns));
    expect(episode.state.tokens.generatedText).toBe(inProcess.generatedText);
    expect(episode.state.retrieved).toEqual(inProcess.retrievedBasenames);
    expect(episode.state.tokens.fullInputIds).toEqual(inProcess.fullInputIds);
    expect(episode.state.tokens.lossMask).toEqual(inProcess.lossMask);
    expect(observations.slice(0, -1).map((o) => o.text)).toEqual(
      inProcess.turns.slice(0, observations.length - 1).map((t) => t.observation),
    );
    expect(observations.at(-1)!.done).toBe(true);
  });

  it('scores at done through the generator and the judge, and refuses a step after done', async () => {
    const { episode } = await both([
      '<think>a</think>\n<search>acme revenue 2019</search>',
      '<think>b</think>\n<search_complete>true</search_complete>',
    ]);
    const gateway = createPortGateway(
      { generator: createMockGenerator({ answer: '4.5 billion dollars' }), judge: createRuleJudge() },
      singleAttemptPolicies(),
    );
    const scored = await scoreStepwiseEpisode(episode, gateway, { reward: { scheme: 'searcher' } });
    expect(scored.reward.status).toBe('ok');
    expect(scored.trajectory.reward).toBeGreaterThan(0);
    expect(scored.trajectory.generatedText).toContain('<answer>');
    await expect(stepEpisode(episode, '<search>x</search>', gateway)).rejects.toThrow(/done/);
  });

  it('keeps a failed reward missing with its cause', async () => {
    const { episode } = await both([
      '<think>a</think>\n<search>acme revenue 2019</search>',
      '<think>b</think>\n<search_complete>true</search_complete>',
    ]);
    const failing = {
      specificationVersion: 'v1',
      provider: 'broken',
      doScore: async () => {
        throw new Error('judge down');
      },
    };
    const gateway = createPortGateway(
      { generator: createMockGenerator({ answer: 'x' }), judge: failing as never },
      singleAttemptPolicies(),
    );
    const scored = await scoreStepwiseEpisode(episode, gateway, { reward: { scheme: 'searcher' } });
    expect(scored.reward).toMatchObject({ status: 'missing', cause: { stage: 'judge' } });
    expect(scored.trajectory.reward).toBeNull();
  });

  it("records a trainer's turn by its ids (no object per token); its TokenSteps are made when read, as before", async () => {
    const tokenizer = createProtocolTokenizer();
    let tokenTexts = 0;
    const counting = {
      ...tokenizer,
      tokenText: (id: number) => (tokenTexts++, tokenizer.tokenText(id)),
    };
    const gateway = createPortGateway(
      { searchEngine: createMockSearchEngine({ pages }), imageOps: createRawImageOps() },
      singleAttemptPolicies(),
    );
    const episode = beginStepwiseEpisode(instance, { config, tokenizer: counting });
    const turn = `<think>${'long thought é '.repeat(2000)}</think>\n<search>acme revenue 2019</search>`;
    await stepEpisode(episode, turn, gateway);
    expect(tokenTexts).toBe(0);
    const ids = tokenizer.encode(turn);
    const { tokens } = episode.state;
    const first = tokens.promptLength;
    expect(tokens.fullInputIds.slice(first, first + ids.length)).toEqual(ids);
    expect(tokens.lossMask.slice(first, first + ids.length).every((m) => m === 1)).toBe(true);
    expect(tokens.tokenSteps).toEqual(
      ids.map((tokenId, k) => ({
        tokenId,
        tokenText: tokenizer.tokenText(tokenId),
        logProb: 0,
        position: first + k,
      })),
    );
    expect(tokens.generatedPositions).toEqual(ids.map((_, k) => first + k));
  });

  it('scores without making the token record when asked (tokens: false): the same reward, no TokenStep made', async () => {
    const tokenizer = createProtocolTokenizer();
    let tokenTexts = 0;
    const counting = { ...tokenizer, tokenText: (id: number) => (tokenTexts++, tokenizer.tokenText(id)) };
    const engine = createMockSearchEngine({ pages });
    const gateway = createPortGateway(
      {
        searchEngine: engine,
        imageOps: createRawImageOps(),
        generator: createMockGenerator({ answer: '4.5 billion dollars' }),
        judge: createRuleJudge(),
      },
      singleAttemptPolicies(),
    );
    const scores = [];
    for (const tokens of [true, false]) {
      const episode = beginStepwiseEpisode(instance, { config, tokenizer: counting });
      await stepEpisode(episode, '<think>a</think>\n<search>acme revenue 2019</search>', gateway);
      await stepEpisode(episode, '<think>b</think>\n<search_complete>true</search_complete>', gateway);
      tokenTexts = 0;
      const scored = await scoreStepwiseEpisode(episode, gateway, { reward: { scheme: 'searcher' }, tokens });
      scores.push({ scored, tokenTexts });
    }
    const [full, light] = scores;
    expect(full!.tokenTexts).toBeGreaterThan(0);
    expect(full!.scored.trajectory.tokenSteps.length).toBeGreaterThan(0);
    expect(light!.tokenTexts).toBe(0);
    expect(light!.scored.reward).toEqual(full!.scored.reward);
    expect(light!.scored.trajectory).toMatchObject({
      finalAnswer: full!.scored.trajectory.finalAnswer,
      terminated: full!.scored.trajectory.terminated,
      reward: full!.scored.trajectory.reward,
      tokenSteps: [],
      fullInputIds: [],
      lossMask: [],
      generatedPositions: [],
    });
  });
});
