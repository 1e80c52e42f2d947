import {
  createMockGenerator,
  createMockSearchEngine,
  createRawImage,
  createRawImageOps,
} from '../../src/adapters/mock/index';
import { createRuleJudge } from '../../src/adapters/rule-judge/index';
import { createPortGateway, singleAttemptPolicies } from '../../src/core/calls/gateway';
import type { Judge } from '../../src/ports/judge';
import type { ServedEnvironment } from '../../src/server/environment';

/**
 * A small served environment over the mock adapters (two pages, two tasks), for the server's
 * tests, the recorded transcripts and the bench's protocol overhead figures.
 */
export function mockServedEnvironment(
  options: { judge?: Judge; searchDelayMs?: number } = {},
): ServedEnvironment {
  const engine = createMockSearchEngine({
    pages: [
      { basename: 'acme_1.png', text: 'Acme annual report 2019 overview', image: createRawImage(8, 4) },
      {
        basename: 'acme_2.png',
        text: 'Acme revenue 2019 was 4.5 billion dollars',
        image: createRawImage(8, 4),
      },
    ],
  });
  const delayed = options.searchDelayMs
    ? {
        ...engine,
        doSearch: async (...args: Parameters<typeof engine.doSearch>) => (
          await new Promise((r) => setTimeout(r, options.searchDelayMs)), engine.doSearch(...args)
        ),
      }
    : engine;
  const gateway = createPortGateway(
    {
      searchEngine: delayed,
      imageOps: createRawImageOps(),
      generator: createMockGenerator({ facts: { 'acme_2.png': '4.5 billion dollars' } }),
      judge: options.judge ?? createRuleJudge(),
    },
    singleAttemptPolicies(),
  );
  return {
    gateway,
    tasks: [
      {
        uid: 'acme-revenue',
        question: 'What was Acme revenue in 2019?',
        reference: '4.5 billion dollars',
        goldenBasenames: ['acme_2.png'],
      },
      {
        uid: 'acme-report',
        question: 'Which year does the Acme annual report cover?',
        reference: '2019',
        goldenBasenames: ['acme_1.png'],
      },
    ],
    episode: { maxTurns: 4, cropMinOutputSide: 16 },
    reward: { scheme: 'searcher' },
  };
}
