import { describe, expect, it } from 'vitest';
import { createPortGateway } from '../calls/gateway';
import type { Generator } from '../../ports/generator';
import type { Judge } from '../../ports/judge';
import type { EpisodeSummary } from './episodes';
import { rewriteThinks } from './rewrite';
import { verifyCandidates } from './verify';

const episode = (promptUid: string, answer: string, reference: string): EpisodeSummary => ({
  runId: 'r',
  step: 1,
  promptUid,
  sampleId: `${promptUid}#0`,
  rolloutIndex: 0,
  query: `q-${promptUid}`,
  reference,
  goldenBasenames: [`${promptUid}_1.png`],
  retrievedBasenames: [],
  judgeScore: 0,
  ndcg: 1,
  reward: 0,
  formatPassed: true,
  searches: 1,
  crops: 0,
  textLength: 10,
  answer,
  terminated: 'complete',
  errorStage: null,
});

// The golden page of each prompt says what its text says; the judge is exact match.
const generator = (answers: Record<string, string>): Generator => ({
  specificationVersion: 'v1',
  provider: 'fake',
  async doAnswer(question, evidence) {
    if (question.startsWith('Rewrite'))
      return { answer: answers[question.split('\n\n')[1]!] ?? question.split('\n\n')[1]! };
    return { answer: evidence[0]?.text ?? 'unknown' };
  },
});
const judge: Judge = {
  specificationVersion: 'v1',
  provider: 'fake',
  async doScore(_q, answer, reference) {
    return {
      score: answer.trim() === reference.trim() ? 1 : 0,
      raw: `score ${answer === reference ? 1 : 0}`,
    };
  },
};

describe('verifyCandidates through the gateway', () => {
  it('labels GT_ERROR, GEN_ERROR, BOTH_WRONG, and UNCERTAIN when the golden page is missing', async () => {
    const pages: Record<string, string> = { gt_1: '12', gen_1: '7', both_1: '5' };
    const gateway = createPortGateway({ generator: generator({}), judge });
    const candidates = [
      episode('gt', '12', '13'),
      episode('gen', '3', '7'),
      episode('both', '4', '9'),
      episode('none', '1', '2'),
    ].map((e) => ({ episode: e, reason: 'judge_zero_ndcg_high' as const }));
    const verdicts = await verifyCandidates(gateway, candidates, {
      goldenEvidence: async (c) =>
        pages[`${c.episode.promptUid}_1`]
          ? [
              {
                kind: 'page',
                basename: c.episode.goldenBasenames[0]!,
                text: pages[`${c.episode.promptUid}_1`]!,
              },
            ]
          : [],
    });
    expect(verdicts.map((v) => [v.promptUid, v.label])).toEqual([
      ['gt', 'GT_ERROR'],
      ['gen', 'GEN_ERROR'],
      ['both', 'BOTH_WRONG'],
      ['none', 'UNCERTAIN'],
    ]);
    expect(verdicts[0]!.detail).toMatchObject({
      goldenAnswer: '12',
      goldenScore: 0,
      rolloutVsGolden: 1,
      reference: '13',
    });
  });
});

describe('rewriteThinks through the Generator port', () => {
  it('keeps safe rewrites, reverts unsafe thinks, drops polluted rows, counts each reason', async () => {
    const turns = {
      clean: '<think>need revenue</think>\n<search>revenue</search>',
      claim: '<think>look</think>\n<bbox>[1,2,3,4]</bbox>',
      polluted: '<think>I typed <search>x</search></think>\n<search>x</search>',
    };
    const gateway = createPortGateway({
      generator: generator({
        [turns.clean]: '<think>I need the 2019 revenue.</think>\n<search>revenue</search>',
        [turns.claim]: '<think>이미지에서 숫자가 보인다</think>\n<bbox>[1,2,3,4]</bbox>',
        [turns.polluted]: '<think>I typed <search>y</search></think>\n<search>x</search>',
      }),
    });
    const row = (uid: string, content: string) => ({
      uid,
      format_version: 'v1',
      messages: [
        { role: 'system' as const, content: 's' },
        { role: 'user' as const, content: 'q' },
        { role: 'assistant' as const, content },
      ],
    });
    const report = await rewriteThinks(gateway, [
      row('a', turns.clean),
      row('b', turns.claim),
      row('c', turns.polluted),
    ]);
    expect(report.rows.map((r) => r.messages[2]!.content)).toEqual([
      '<think>I need the 2019 revenue.</think>\n<search>revenue</search>',
      turns.claim,
    ]);
    expect(report.counts).toMatchObject({
      rows: 3,
      dropped: 1,
      turns: 3,
      rewritten: 1,
      rejections: { observation_claim_added: 1, action_tag_in_original_think: 1, outside_changed: 0 },
    });
  });
});

describe('bucket-0 review through the gateway (issue 25)', () => {
  it('the Generator answers from the golden page; a page that cannot give the reference is GT_ERROR, one that can GT_OK; no rollout comparison', async () => {
    // wrong: its golden page says 12 but the reference is 4.5 (a wrong golden page); right: the page says 7.
    const pages: Record<string, string> = { wrong_1: '12', right_1: '7' };
    const scored: string[] = [];
    const countingJudge: Judge = {
      ...judge,
      async doScore(q, answer, reference, signal) {
        scored.push(`${answer}|${reference}`);
        return judge.doScore(q, answer, reference, signal);
      },
    };
    const gateway = createPortGateway({ generator: generator({}), judge: countingJudge });
    const progress: Array<[number, number]> = [];
    const verdicts = await verifyCandidates(
      gateway,
      [episode('wrong', '', '4.5'), episode('right', '', '7'), episode('gone', '', '1')].map((e) => ({
        episode: e,
        reason: 'bucket0_review' as const,
      })),
      {
        goldenEvidence: async (c) => {
          const text = pages[`${c.episode.promptUid}_1`];
          return text ? [{ kind: 'page', basename: c.episode.goldenBasenames[0]!, text }] : [];
        },
        onProgress: (done, total) => progress.push([done, total]),
        concurrency: 1,
      },
    );
    expect(verdicts.map((v) => [v.promptUid, v.reason, v.label])).toEqual([
      ['wrong', 'bucket0_review', 'GT_ERROR'],
      ['right', 'bucket0_review', 'GT_OK'],
      ['gone', 'bucket0_review', 'UNCERTAIN'],
    ]);
    expect(verdicts[0]!.detail).toMatchObject({
      goldenPages: ['wrong_1.png'],
      goldenAnswer: '12',
      goldenScore: 0,
      reference: '4.5',
    });
    expect(scored).toEqual(['12|4.5', '7|7']);
    expect(progress).toEqual([
      [1, 3],
      [2, 3],
      [3, 3],
    ]);
  });
});
