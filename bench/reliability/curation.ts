// The data-centric loop's checks (docs/reliability.md#the-data-centric-loop): wrong golden pages
// planted among a slide corpus's questions and the review of bucket 0 that must catch them (with
// and without the enlarged page), the observation-claim check on sentences in three languages
// (the rule's phrases alone against the broader patterns), and distilled rows with an action tag
// inside a think (kept before, dropped now).
import { createRuleJudge } from '../../src/adapters/rule-judge/index';
import { createSharpImageOps } from '../../src/adapters/image/index';
import { createPortGateway } from '../../src/core/calls/gateway';
import { dropThinkActionTagRows, type SftRow } from '../../src/core/curation/distill';
import type { EpisodeSummary } from '../../src/core/curation/episodes';
import { hasObservationClaim } from '../../src/core/curation/think-rewrite';
import { EXCLUDING_LABELS, type VerificationCandidate } from '../../src/core/curation/verification';
import { verifyCandidates } from '../../src/core/curation/verify';
import { createRandom, permutation } from '../../src/core/random';
import type { PromptRecord } from '../../src/core/types';
import { buildSlideEnvironment } from '../../src/env/slides/build';
import { createSlideReader } from '../../src/env/slides/reader';
import { goldenEvidenceFrom } from '../../src/run/curate/data';

const PLANTED = 30;

const review = (p: PromptRecord): VerificationCandidate => ({
  reason: 'bucket0_review',
  episode: {
    runId: 'phase1',
    step: 1,
    promptUid: p.uid,
    sampleId: `${p.uid}#0`,
    rolloutIndex: 0,
    query: p.question,
    reference: p.reference ?? null,
    goldenBasenames: p.goldenBasenames ?? [],
    retrievedBasenames: [],
    judgeScore: null,
    ndcg: 0,
    reward: 0,
    formatPassed: true,
    searches: 1,
    crops: 0,
    textLength: 0,
    answer: '',
    terminated: 'complete',
    errorStage: null,
  } satisfies EpisodeSummary,
});

/** Every training question of a slide corpus reviewed as bucket 0, PLANTED of them given another deck's slide as golden page. */
async function plantedGoldenPages(dir: string, zoom: boolean) {
  const env = await buildSlideEnvironment(dir, { seed: 7, decks: 40, minSlides: 5, maxSlides: 10 });
  const questions = env.corpus.questions.train;
  const slides = env.corpus.decks.flatMap((d) => d.slides.map((s) => s.basename));
  const random = createRandom(7, 25);
  const planted = new Set(
    permutation(questions.length, random)
      .slice(0, PLANTED)
      .map((i) => questions[i]!.uid),
  );
  const deckOf = (basename: string) => basename.replace(/_\d+\.png$/, '');
  const prompts = questions.map((q, i) => {
    if (!planted.has(q.uid)) return q;
    const own = deckOf(q.goldenBasenames![0]!);
    const others = slides.filter((s) => deckOf(s) !== own);
    return { ...q, goldenBasenames: [others[(i * 7919) % others.length]!] };
  });
  const gateway = createPortGateway({ generator: createSlideReader(env.corpus), judge: createRuleJudge() });
  const golden = await goldenEvidenceFrom(env.dbPath, zoom ? { imageOps: createSharpImageOps() } : {});
  try {
    const verdicts = await verifyCandidates(gateway, prompts.map(review), { goldenEvidence: golden.lookup });
    const excluded = new Set(verdicts.filter((v) => EXCLUDING_LABELS.has(v.label)).map((v) => v.promptUid));
    const smallPrint = new Set(questions.filter((q) => q.metadata.small).map((q) => q.uid));
    const falseExclusions = [...excluded].filter((uid) => !planted.has(uid));
    return {
      questions: questions.length,
      planted: planted.size,
      caught: [...planted].filter((uid) => excluded.has(uid)).length,
      falseExclusions: falseExclusions.length,
      falseExclusionsSmallPrint: falseExclusions.filter((uid) => smallPrint.has(uid)).length,
    };
  } finally {
    golden.close();
  }
}

// The rule's phrases as docs/method.md lists them: what the check matched before it was broadened.
const RULE_ONLY = [
  /\b(the image shows|in the image|i can see|visible in the image|it clearly shows)\b/i,
  /(이미지에서|사진에서)[^.!?。\n]*?(보이|보인|보였|보임|확인)/u,
  /(图中|图片中)[^。！？\n]*?(显示|可以看到)/u,
];
const CLAIMS: Record<'en' | 'ko' | 'zh', string[]> = {
  en: [
    'The image shows a bar chart of revenue by quarter.',
    'In the image, the third row lists the 2019 total.',
    'I can see the title "Market share" at the top.',
    'The picture shows a table of revenue by year.',
    'I see the number 12000 next to "employees".',
    'We can see that the 2019 column is the highest.',
    'The slide displays a pie chart of market share.',
    'Looking at the image, the logo sits in the top corner.',
    'The total is clearly visible on the second row.',
    'The revenue figure is shown in the lower half.',
    'I notice a footnote about 2018 under the chart.',
    'This page lists the founders and the year.',
    'As shown in the chart, sales doubled.',
    'The photo depicts the headquarters building.',
    'I spotted the date in the cropped region.',
  ],
  ko: [
    '이미지에서 숫자가 보인다.',
    '사진에서 제목이 확인된다.',
    '그림에서 2019년 매출이 나타나 있다.',
    '화면에 회사 로고가 보인다.',
    '슬라이드에서 직원 수를 알 수 있다.',
    '표의 두 번째 줄에서 12000이라는 숫자를 볼 수 있다.',
    '오른쪽 위에 작은 글씨가 보입니다.',
    '이미지를 보면 매출이 두 배로 늘었다.',
    '페이지에 설립 연도가 적혀 있다.',
    '차트에서 감소 추세가 보였다.',
  ],
  zh: [
    '图中显示了2019年的销售额。',
    '图片中可以看到标题是市场份额。',
    '图片上写着2019年的收入。',
    '我可以看到标题是市场份额。',
    '如图所示，销售额翻了一番。',
    '从图中可以看出利润下降了。',
    '截图中显示了员工人数。',
    '我们注意到右下角有一个脚注。',
    '图片清楚地显示了公司的标志。',
    '幻灯片上标着总收入。',
  ],
};
const PLAIN: Record<'en' | 'ko' | 'zh', string[]> = {
  en: [
    'I should search for the revenue slide first.',
    'Let me search for the 2019 revenue.',
    'I seem to have the wrong deck; search again with the company name.',
    'The question asks for the number of employees, so crop the small print.',
    'Seeing no match yet, I will try a shorter query.',
    'Image processing is a field of study.',
  ],
  ko: [
    '먼저 매출 슬라이드를 검색해야 한다.',
    '질문은 2019년 직원 수를 묻는다.',
    '검색 결과가 부족한 것으로 보인다. 다른 검색어를 써야 한다.',
  ],
  zh: ['我需要再搜索一次。', '下一步是裁剪右上角。', '这个问题关于图片处理。'],
};

function claimCheck() {
  const out: Record<string, string> = {};
  for (const lang of ['en', 'ko', 'zh'] as const) {
    const before = CLAIMS[lang].filter((s) => RULE_ONLY.some((p) => p.test(s))).length;
    const after = CLAIMS[lang].filter(hasObservationClaim).length;
    const falsePositives = PLAIN[lang].filter(hasObservationClaim).length;
    out[lang] =
      `claims ${before} -> ${after} of ${CLAIMS[lang].length}; plain flagged ${falsePositives} of ${PLAIN[lang].length}`;
  }
  return out;
}

function actionTagRows() {
  const tags = [
    '<bbox>',
    '</search>',
    '<Answer>',
    '< search_complete>',
    '<BBOX>[1,2,3,4]</BBOX>',
    '</ answer>',
  ];
  const row = (think: string, i: number): SftRow => ({
    uid: `r${i}`,
    format_version: 'v1',
    messages: [
      { role: 'system', content: 's' },
      { role: 'user', content: 'q' },
      { role: 'assistant', content: '<think>find it</think>\n<search>revenue</search>' },
      { role: 'user', content: '<information>page</information>' },
      { role: 'assistant', content: `<think>${think}</think>\n<search_complete>true</search_complete>` },
    ],
  });
  const polluted = tags.map((tag, i) => row(`use ${tag} then`, i));
  const clean = ['search again', 'a bbox around the number', 'answer: 12', '<searching> is no tag'].map(
    (t, i) => row(t, 100 + i),
  );
  const out = dropThinkActionTagRows([...polluted, ...clean]);
  return {
    polluted: polluted.length,
    dropped: out.dropped,
    cleanKept: out.rows.length,
    clean: clean.length,
    droppedBefore: 0,
  };
}

export async function curationReliability(dir: string) {
  return {
    name: 'curation',
    plantedGoldenPages: await plantedGoldenPages(dir, true),
    plantedGoldenPagesWithoutEnlargedPage: await plantedGoldenPages(dir, false),
    // Before the review of bucket 0, a planted question (bucket 0: no rollout finds its golden page) was never a candidate.
    plantedGoldenPagesBefore: { caught: 0, planted: PLANTED },
    observationClaims: claimCheck(),
    actionTagRows: actionTagRows(),
  };
}
