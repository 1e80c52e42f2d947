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

// Issue 25: the claim check missed "The picture shows" and "I see"; these are sentences of the kind
// a rewriting model adds to a think (each language of the original data), and reasoning it must leave.
const MORE_CLAIMS = {
  en: [
    'The picture shows a table of revenue by year.',
    'I see the number 12000 next to "employees".',
    'We can see that the 2019 column is the highest.',
    'The slide displays a pie chart of market share.',
    'Looking at the image, the logo sits in the top corner.',
    'The total is clearly visible on the second row.',
    'The revenue figure is shown in the lower half.',
    "I'm looking at the cropped region now and it has the date.",
    'I notice a footnote about 2018 under the chart.',
    'This page lists the founders and the year.',
    'As shown in the chart, sales doubled.',
  ],
  ko: [
    '그림에서 2019년 매출이 나타나 있다.',
    '화면에 회사 로고가 보인다.',
    '슬라이드에서 직원 수를 알 수 있다.',
    '표의 두 번째 줄에서 12000이라는 숫자를 볼 수 있다.',
    '오른쪽 위에 작은 글씨가 보입니다.',
    '이미지를 보면 매출이 두 배로 늘었다.',
    '페이지에 설립 연도가 적혀 있다.',
  ],
  zh: [
    '图片上写着2019年的收入。',
    '我可以看到标题是市场份额。',
    '如图所示，销售额翻了一番。',
    '从图中可以看出利润下降了。',
    '截图中显示了员工人数。',
    '我们注意到右下角有一个脚注。',
    '图片清楚地显示了公司的标志。',
  ],
};
const MORE_PLAIN = {
  en: [
    'Let me search for the 2019 revenue.',
    'I seem to have the wrong deck; search again with the company name.',
    'The question asks for the number of employees, so crop the small print.',
    'Seeing no match yet, I will try a shorter query.',
    'If the first page does not answer, try the appendix.',
  ],
  ko: [
    '질문은 2019년 직원 수를 묻는다.',
    '검색 결과가 부족한 것으로 보인다. 다른 검색어를 써야 한다.',
    '회사 이름으로 다시 검색한다.',
  ],
  zh: ['我需要再搜索一次。', '下一步是裁剪右上角。', '问题问的是员工人数。'],
};

describe('observation claim patterns (issue 25: broader)', () => {
  for (const [lang, sentences] of Object.entries(MORE_CLAIMS)) {
    it(`match every further ${lang} claim`, () => {
      for (const s of sentences) expect(OBSERVATION_CLAIM_PATTERNS[lang as 'en'].test(s), s).toBe(true);
    });
  }
  for (const [lang, sentences] of Object.entries(MORE_PLAIN)) {
    it(`leave further plain ${lang} reasoning alone`, () => {
      for (const s of sentences) expect(hasObservationClaim(s), s).toBe(false);
    });
  }
  it('a rewrite that adds one of them is reverted', () => {
    for (const claim of [MORE_CLAIMS.en[0]!, MORE_CLAIMS.en[1]!, MORE_CLAIMS.ko[1]!, MORE_CLAIMS.zh[1]!])
      expect(checkThinkRewrite(turn('Find the chart.'), turn(claim)).rejections, claim).toEqual([
        'observation_claim_added',
      ]);
  });
});

describe('an action tag inside an original think (issue 25)', () => {
  it('drops the row even when the rewrite took the tag out: there is no clean think to roll back to', () => {
    expect(checkThinkRewrite(turn('use <bbox> then'), turn('crop the small print next'))).toMatchObject({
      text: null,
      rejections: ['action_tag_in_original_think'],
    });
  });
});
