// Swap one adapter in the composition root: `npx tsx examples/swap-judge.ts`
import { createSearcherContainer, TOKENS } from 'searcher-rl/container';
import type { Judge, Searcher } from 'searcher-rl';

const container = createSearcherContainer({
  rl: { nAgent: 2 },
  adapters: {
    searchEngine: {
      type: 'mock',
      pages: [{ basename: 'acme_2.png', text: 'Acme revenue 2019: 4.5 billion dollars' }],
    },
    policy: {
      type: 'scripted',
      script: ['<search>Acme revenue</search>', '<search_complete>true</search_complete>'],
    },
    // A verbose answer: the default rule judge accepts it (it contains the reference), an exact judge does not.
    generator: { type: 'mock', answer: 'Acme made 4.5 billion dollars in 2019' },
  },
});

// A judge of your own: anything with doScore(question, answer, reference) -> { score in [0, 1] }.
const exactJudge: Judge = {
  specificationVersion: 'v1',
  provider: 'exact',
  doScore: async (_question, answer, reference) => ({ score: answer.trim() === reference.trim() ? 1 : 0 }),
};
container.rebind<Judge>(TOKENS.Judge).toConstantValue(exactJudge);

const searcher = await container.getAsync<Searcher>(TOKENS.Searcher);
const batch = await searcher.collect([
  {
    uid: 'q1',
    question: 'Acme revenue in 2019?',
    reference: '4.5 billion dollars',
    goldenBasenames: ['acme_2.png'],
  },
]);
console.log(batch.episodes.map((e) => e.trajectory.reward));
