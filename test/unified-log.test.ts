import { describe, expect, it } from 'vitest';
import { createMemoryStore, createMockGenerator, createMockSearchEngine } from '../src/adapters/mock/index';
import { createScriptedPolicy } from '../src/adapters/scripted-policy/index';
import { createSearcher, type Judge } from '../src/index';
import { createVirtualClock } from '../src/testing/virtual-clock';

describe('the unified log', () => {
  it("records each rollout's API latency: the generator's and the judge's calls, retries included", async () => {
    const clock = createVirtualClock();
    const judge: Judge = {
      specificationVersion: 'v1',
      provider: 'slow',
      async doScore() {
        await clock.sleep(250);
        return { score: 1 };
      },
    };
    const store = createMemoryStore();
    const searcher = createSearcher(
      {
        policy: createScriptedPolicy({
          script: ['<search>acme revenue</search>', '<search_complete>true</search_complete>'],
        }),
        searchEngine: createMockSearchEngine({
          pages: [{ basename: 'acme.png', text: 'acme revenue 4.5 billion dollars' }],
        }),
        generator: createMockGenerator({ facts: { 'acme.png': '4.5 billion dollars' } }),
        judge,
        store,
        clock,
      },
      { rl: { nAgent: 2 } },
    );
    await clock.run(
      searcher.collect(
        [
          {
            uid: 'acme',
            question: 'Acme revenue?',
            reference: '4.5 billion dollars',
            goldenBasenames: ['acme.png'],
          },
        ],
        { runId: 'log' },
      ),
    );
    const latency = store.records
      .filter((r) => r.kind === 'event' && (r.data as { type: string }).type === 'api.latency')
      .map((r) => (r.data as { data: Record<string, number> }).data);
    expect(latency).toHaveLength(2);
    for (const entry of latency) {
      expect(entry.judgeMs).toBe(250);
      expect(entry.generatorMs).toBe(0);
    }
    expect(
      store.records.find((r) => r.kind === 'event' && (r.data as { type: string }).type === 'api.latency'),
    ).toMatchObject({ promptUid: 'acme', rolloutIndex: expect.any(Number) });
  });
});
