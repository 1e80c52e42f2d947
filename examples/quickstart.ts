import { createSearcher } from 'searcher-rl';
import { createMockGenerator, createMockSearchEngine } from 'searcher-rl/mock';
import { createRuleJudge } from 'searcher-rl/rule-judge';
import { createScriptedPolicy } from 'searcher-rl/scripted-policy';

const pages = [
  { basename: 'acme_1.png', text: 'Acme overview: annual report' },
  { basename: 'acme_2.png', text: 'Acme revenue 2019: 4.5 billion dollars' },
];
const done = '<search_complete>true</search_complete>';
const searcher = createSearcher({
  policy: createScriptedPolicy({ script: [['<think>Find revenue.</think>\n<search>Acme revenue 2019</search>', done], ['<think>Guess.</think>\n<search>Acme overview</search>', done]] }),
  searchEngine: createMockSearchEngine({ pages }),
  generator: createMockGenerator({ facts: { 'acme_2.png': '4.5 billion dollars' } }),
  judge: createRuleJudge(),
});
const question = { uid: 'q1', question: 'Acme revenue in 2019?', reference: '4.5 billion dollars', goldenBasenames: ['acme_2.png'] };
const batch = await searcher.collect([question], { nAgent: 2 });
for (const { trajectory: t } of batch.episodes) console.log(t.sampleId, t.retrievedBasenames, t.finalAnswer, t.reward, t.advantage?.toFixed(3));
