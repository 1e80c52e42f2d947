import { describe, expect, it } from 'vitest';
import {
  ACTION_TAG_PATTERN,
  checkThinkRewrite,
  hasObservationClaim,
  OBSERVATION_CLAIM_PATTERNS,
  outsideThinks,
  thinkSpans,
} from './think-rewrite';

// Real sentences of the kind a rewriting model writes, in the three languages of the original data.
const CLAIMS = {
  en: [
    'The image shows a bar chart of revenue by quarter.',
    'In the image, the third row lists the 2019 total.',
    'I can see the title "Market share" at the top.',
    'The figure for Europe is visible in the image.',
    'It clearly shows that sales doubled.',
  ],
  ko: [
    '이미지에서 2019년 매출이 가장 높게 보이므로 답은 12억이다.',
    '사진에서 제목이 확인된다.',
    '이미지에서 표의 두 번째 열을 확인할 수 있다.',
    '이미지에서 숫자가 보인다.',
    '사진에서 로고가 보였다.',
  ],
  zh: ['图中显示了2019年的销售额。', '图片中可以看到标题是市场份额。', '图中右上角清楚地显示了总数。'],
};
const PLAIN = {
  en: [
    'I should search for the revenue slide first.',
    'The answer is probably in the appendix deck.',
    'Image processing is a field of study.',
  ],
  ko: ['먼저 매출 슬라이드를 검색해야 한다.', '이미지 처리에 관한 질문이다.'],
  zh: ['我应该先搜索销售额的幻灯片。', '这个问题关于图片处理。'],
};

describe('observation claim patterns', () => {
  for (const [lang, sentences] of Object.entries(CLAIMS)) {
    it(`match every ${lang} claim`, () => {
      for (const s of sentences) expect(OBSERVATION_CLAIM_PATTERNS[lang as 'en'].test(s), s).toBe(true);
    });
  }
  for (const [lang, sentences] of Object.entries(PLAIN)) {
    it(`leave plain ${lang} reasoning alone`, () => {
      for (const s of sentences) expect(hasObservationClaim(s), s).toBe(false);
    });
  }
  it('are single-escaped (the double-escaped copies never matched)', () => {
    expect(OBSERVATION_CLAIM_PATTERNS.en.source).not.toContain('\\\\b');
    expect(/\\bthe image shows\\b/i.test('The image shows a chart')).toBe(false);
  });
});

describe('action tag pattern', () => {
  it('matches opening and closing tags in any case, with spaces', () => {
    for (const s of ['<search>q</search>', '</ bbox>', '<BBOX>[1,2,3,4]', '< search_complete>', '<Answer>x'])
      expect(ACTION_TAG_PATTERN.test(s), s).toBe(true);
    for (const s of ['I will search for it', 'a bbox around the number', '<searching>', 'answer: 12'])
      expect(ACTION_TAG_PATTERN.test(s), s).toBe(false);
  });
});

const turn = (think: string, action = '<search>revenue 2019</search>') =>
  `<think>${think}</think>\n${action}`;

describe('checkThinkRewrite', () => {
  it('keeps a clean rewrite and leaves outside text byte-identical', () => {
    const check = checkThinkRewrite(
      turn('I need revenue. Search.'),
      turn('I need the 2019 revenue, so I search for it.'),
    );
    expect(check).toMatchObject({
      text: turn('I need the 2019 revenue, so I search for it.'),
      kept: 1,
      reverted: 0,
      rejections: [],
    });
    expect(outsideThinks(check.text!)).toBe(outsideThinks(turn('x')));
  });
  it('refuses a rewrite that changes text outside the thinks', () => {
    expect(checkThinkRewrite(turn('a'), turn('b', '<search>revenue 2020</search>'))).toMatchObject({
      text: turn('a'),
      rejections: ['outside_changed'],
    });
  });
  it('refuses a rewrite with another number of thinks', () => {
    expect(
      checkThinkRewrite(turn('a'), `<think>b</think><think>c</think>\n<search>revenue 2019</search>`)
        .rejections,
    ).toEqual(['think_count_changed']);
    const two = '<think>a</think> x <think>b</think>';
    expect(checkThinkRewrite(two, '<think>a2</think> x <think>b2</think>').rejections).toEqual([]);
  });
  it('reverts a think that gained an action tag, drops the row when the original had one', () => {
    expect(checkThinkRewrite(turn('plan'), turn('plan: <bbox>[1,2,3,4]</bbox>'))).toMatchObject({
      text: turn('plan'),
      reverted: 1,
      rejections: ['action_tag_added'],
    });
    expect(
      checkThinkRewrite(turn('I wrote <search>x</search> here'), turn('I wrote <search>y</search>')),
    ).toMatchObject({ text: null, rejections: ['action_tag_in_original_think'] });
  });
  it('reverts a think with a new observation claim in each language, keeps one the original made', () => {
    for (const claim of [CLAIMS.en[0]!, CLAIMS.ko[0]!, CLAIMS.zh[0]!]) {
      expect(checkThinkRewrite(turn('Find the chart.'), turn(claim)), claim).toMatchObject({
        text: turn('Find the chart.'),
        rejections: ['observation_claim_added'],
      });
    }
    expect(checkThinkRewrite(turn(CLAIMS.en[0]!), turn(`${CLAIMS.en[0]!} Then answer.`)).rejections).toEqual(
      [],
    );
  });
  it('handles each think on its own', () => {
    const original = '<think>one</think>\n<search>q</search>';
    const multi = `${original}\n<think>two</think>\n<bbox>[1,2,3,4]</bbox>`;
    const rewritten = `<think>one, clearer</think>\n<search>q</search>\n<think>I can see the number</think>\n<bbox>[1,2,3,4]</bbox>`;
    const check = checkThinkRewrite(multi, rewritten);
    expect(thinkSpans(check.text!)).toEqual(['one, clearer', 'two']);
    expect(check).toMatchObject({ kept: 1, reverted: 1 });
  });
});
