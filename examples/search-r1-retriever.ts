// Search-R1 mode against a Search-R1 retrieval server (retrieval_server.py on port 8000), scored
// with the Search-R1 format + answer reward (docs/method.md#search-r1-reward): `npx tsx examples/search-r1-retriever.ts`
import { createSearcher } from 'searcher-rl';
import { createScriptedPolicy } from 'searcher-rl/scripted-policy';
import { createSearchR1Retriever } from 'searcher-rl/search-http';

const searcher = createSearcher(
  {
    policy: createScriptedPolicy({
      script: [
        '<think>Look it up.</think>\n<search>Evan Morris lobbyist</search>',
        '<think>The first document says Genentech.</think>\n<answer>Genentech</answer>',
      ],
    }),
    searchEngine: createSearchR1Retriever({ url: process.env.SEARCH_R1_URL ?? 'http://127.0.0.1:8000' }),
  },
  { episode: { mode: 'answer', searchTopK: 3 }, reward: { scheme: 'search-r1' }, rl: { nAgent: 1 } },
);

const batch = await searcher.collect([
  { uid: 'nq-0', question: 'Which company did Evan Morris lobby for?', reference: 'Genentech' },
]);
for (const { trajectory: t } of batch.episodes) console.log(t.retrievedBasenames, t.finalAnswer, t.reward);
