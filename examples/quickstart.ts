import { createSearcher } from 'searcher-rl';
import { createMockGenerator, createMockSearchEngine } from 'searcher-rl/mock';
import { createRuleJudge } from 'searcher-rl/rule-judge';
import { createScriptedPolicy } from 'searcher-rl/scripted-policy';

const answer = '4.5 billion dollars';
const pages = [
  { basename: 'acme_1.png', text: 'Acme overview: annual report' },
  { basename: 'acme_2.png', text: `Acme revenue 2019: ${answer}` },
];
const done = '<search_complete>true</search_complete>';
const good = ['<think>Find revenue.</think>\n<search>Acme revenue 2019</search>', done];
const bad = ['<think>Guess.</think>\n<search>Acme overview</search>', done];
const policy = createScriptedPolicy({ script: [good, bad] });
const generator = createMockGenerator({ facts: { 'acme_2.png': answer } });
const engine = createMockSearchEngine({ pages });
const searcher = createSearcher({ policy, searchEngine: engine, generator, judge: createRuleJudge() });
const q = { uid: 'q1', question: 'Acme revenue 2019?', reference: answer, goldenBasenames: ['acme_2.png'] };
for (const { trajectory: t } of (await searcher.collect([q], { nAgent: 2 })).episodes)
  console.log(t.sampleId, t.retrievedBasenames, t.finalAnswer, t.reward, t.advantage?.toFixed(3));
