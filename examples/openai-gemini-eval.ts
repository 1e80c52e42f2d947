// Evaluate a few questions with the OpenAI frozen generator and the Gemini judge.
// Needs OPENAI_API_KEY and GEMINI_API_KEY: `npx tsx examples/openai-gemini-eval.ts`
import { createSearcher, type PromptRecord } from 'searcher-rl';
import { createGeminiJudge } from 'searcher-rl/gemini';
import { createMockSearchEngine } from 'searcher-rl/mock';
import { createScriptedPolicy } from 'searcher-rl/scripted-policy';
import { createOpenAIGenerator } from 'searcher-rl/openai';

const questions: PromptRecord[] = [
  {
    uid: 'acme-revenue',
    question: 'What was the revenue of Acme in 2019?',
    reference: '4.5 billion dollars',
    goldenBasenames: ['acme_2.png'],
  },
  {
    uid: 'globex-founded',
    question: 'In which year was Globex founded?',
    reference: '1989',
    goldenBasenames: ['globex_1.png'],
  },
];

const searcher = createSearcher(
  {
    // A scripted Searcher keeps this example about the providers; use a trained policy in practice.
    policy: createScriptedPolicy({
      script: (ctx) =>
        ctx.turn === 0
          ? `<search>${/Question: (.*)/.exec(ctx.context)?.[1] ?? ''}</search>`
          : '<search_complete>true</search_complete>',
    }),
    searchEngine: createMockSearchEngine({
      pages: [
        { basename: 'acme_2.png', text: 'Acme revenue 2019: 4.5 billion dollars' },
        { basename: 'globex_1.png', text: 'Globex history: founded 1989 in Springfield' },
      ],
    }),
    generator: createOpenAIGenerator({ model: 'gpt-5-mini', reasoningEffort: 'low', maxOutputTokens: 3072 }),
    judge: createGeminiJudge({ model: 'gemini-3-flash-preview' }),
  },
  {
    rl: { nAgent: 1 },
    calls: { generator: { maxConcurrent: 8, requestsPerMinute: 500 }, judge: { maxConcurrent: 8 } },
  },
);

const batch = await searcher.collect(questions);
for (const { trajectory: t } of batch.episodes) {
  const detail = t.rewardDetail;
  console.log(
    `${t.promptUid}: answer ${JSON.stringify(t.finalAnswer)}, reward ${t.reward ?? 'missing'}${detail?.status === 'missing' ? ` (${detail.cause.message})` : ''}`,
  );
}
