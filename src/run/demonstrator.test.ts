import { describe, expect, it } from 'vitest';
import { createMockGenerator, createMockSearchEngine } from '../adapters/mock/index';
import { createRuleJudge } from '../adapters/rule-judge/rule-judge';
import { parseSearcherConfig } from '../config';
import { createProtocolTokenizer } from '../core/protocol/tokenizer';
import {
  contentQuery,
  cropAttempt,
  demonstrationQueries,
  harvestDemonstrations,
  questionLine,
  referenceAsRead,
} from './demonstrator';

describe('demonstrationQueries', () => {
  it("tries the question's own words first: the whole question, its content words, then each half", () => {
    expect(demonstrationQueries('What is the capital of Zorvel?')).toEqual([
      'What is the capital of Zorvel',
      'capital Zorvel',
      'capital',
      'Zorvel',
    ]);
    expect(contentQuery('What is the capital of Zorvel?')).toBe('capital Zorvel');
  });

  it("adds the golden page name's words, written as the question writes those it has, for a question worded unlike its page", () => {
    const queries = demonstrationQueries('Which goods does Zorvel sell abroad?', ['zorvel_export.txt']);
    expect(queries.at(-1)).toBe('Zorvel export');
    expect(queries).toHaveLength(5);
  });

  it("adds a golden name with none of the question's words to its content words, less the reference's words and ids", () => {
    const queries = demonstrationQueries(
      'How many inhabitants does Zorvel have?',
      ['population.txt'],
      '1200',
    );
    expect(queries.at(-1)).toBe('inhabitants Zorvel population');
    expect(queries).toHaveLength(5);
    // A page named after the answer gives only the words the answer does not have.
    expect(
      demonstrationQueries('What is the point at which light rays converge?', ['Focus_(optics)'], 'Focus').at(
        -1,
      ),
    ).toBe('point light rays converge optics');
    expect(demonstrationQueries('Who wrote it?', ['Pyotr_Tchaikovsky'], 'Pyotr Tchaikovsky')).toEqual(
      demonstrationQueries('Who wrote it?'),
    );
  });

  it('adds nothing where the golden name repeats a query already tried, or names nothing the question has (an id)', () => {
    expect(demonstrationQueries('What is the capital of Zorvel?', ['zorvel_capital.txt'])).toEqual(
      demonstrationQueries('What is the capital of Zorvel?'),
    );
    expect(demonstrationQueries('Who founded the company on the slide?', ['deck12_3.png'])).toEqual(
      demonstrationQueries('Who founded the company on the slide?'),
    );
    // A page number is an id too: the question cannot give it.
    expect(demonstrationQueries('When was Acme founded?', ['acme_3.png'])).toEqual(
      demonstrationQueries('When was Acme founded?'),
    );
  });
});

describe('cropAttempt', () => {
  const page =
    '[page acme_3.png (640x360)]\nAcme finance\n[source at <x1_1><y1_24><x2_11><y2_29>] [footnote at <x1_17><y1_20><x2_23><y2_25>]';
  it("tries the page's marked regions in turn, by name or by the page's mark (name and box), and none where the reference is legible", () => {
    expect([0, 1, 2].map((rollout) => cropAttempt(page, '8.0 billion', rollout))).toEqual([
      'source',
      'footnote',
      'source',
    ]);
    expect(cropAttempt(page, '8.0 billion', 1, 'location')).toBe('footnote at <x1_17><y1_20><x2_23><y2_25>');
    expect(cropAttempt(`${page}\nRevenue: 8.0 billion`, '8.0 billion', 0)).toBeNull();
    expect(cropAttempt('[page acme_1.png]\nAcme', '8.0 billion', 0)).toBeNull();
  });
});

describe('questionLine', () => {
  it("gives the page's line sharing the most words with the question, case aside, never a mark or the header", () => {
    const page =
      '[page acme_3.png (640x360)]\nAcme people\nEmployees 2013: 4,500\nEmployees 2015: see footnote\nRevenue 2001: see source\n[footnote at <x1_17><y1_20><x2_23><y2_25>]';
    expect(questionLine('How many employees did Acme have in 2015?', page)).toBe(
      'Employees 2015: see footnote',
    );
    expect(questionLine('What was the revenue of Acme in 2001?', page)).toBe('Revenue 2001: see source');
    // Ties go to the later line (a heading is less specific); no shared word, no line.
    expect(questionLine('Who leads Acme?', page)).toBe('Acme people');
    expect(questionLine('In which year was Acme founded?', `${page}\nFounded: see contact line`)).toBe(
      'Founded: see contact line',
    );
    expect(questionLine('Where is Zorvel?', page)).toBeNull();
    expect(
      questionLine('In which city is Acme headquartered?', `${page}\nHeadquarters: see contact line`),
    ).toBe('Headquarters: see contact line');
  });
});

/** A ChatML wrapping, as SmolLM2's template writes it. */
const CHATML = {
  prompt: (text: string) => `<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`,
  observation: (text: string) => `<|im_end|>\n<|im_start|>user\n${text}<|im_end|>\n<|im_start|>assistant\n`,
};

describe('harvestDemonstrations', () => {
  // Every query finds the people page of Zorvel first; the capital page (golden) comes next.
  const searchEngine = createMockSearchEngine({
    pages: [
      { basename: 'zorvel_people.txt', text: 'Zorvel people: the capital holds a million.' },
      { basename: 'zorvel_capital.txt', text: 'Zorvel capital: Vell.' },
    ],
  });
  const generator = createMockGenerator({ facts: { 'zorvel_capital.txt': 'Vell' } });
  const prompt = {
    uid: 'q1',
    question: 'What is the capital of Zorvel?',
    reference: 'Vell',
    goldenBasenames: ['zorvel_capital.txt'],
  };
  const harvest = (maxTurns: number) => {
    const config = parseSearcherConfig({ episode: { maxTurns }, rl: { nAgent: 1 } });
    const { adapters: _, ...searcher } = config;
    return harvestDemonstrations({
      prompts: [prompt],
      ports: { searchEngine, generator, judge: createRuleJudge() },
      tokenizer: createProtocolTokenizer(),
      searcher,
      keepPerQuestion: 1,
      firstSuccess: true,
    });
  };

  it('searches again (the next result) where the page read is not a golden page, and keeps that success', async () => {
    const result = await harvest(4);
    expect(result.solved).toBe(1);
    const [t] = result.trajectories;
    const queries = t!.turns.flatMap((turn) => (turn.search ? [turn.search.query] : []));
    expect(queries).toEqual(['What is the capital of Zorvel', 'What is the capital of Zorvel']);
    expect(t!.retrievedBasenames).toEqual(['zorvel_people.txt', 'zorvel_capital.txt']);
    expect(t!.rewardDetail?.components.judgeScore).toBe(1);
  });

  it('completes instead where a second search and its search_complete do not fit the turn budget', async () => {
    const result = await harvest(2);
    expect(result.solved).toBe(0);
    expect(result.trajectories).toEqual([]);
  });

  it.each([
    ['', undefined],
    [', for a chat model', CHATML],
  ])(
    "answer mode%s: searches again the same way, then answers with the reference as the page writes it, and passes Search-R1's format check",
    async (_label, chatFormat) => {
      const config = parseSearcherConfig({
        episode: { mode: 'answer', maxTurns: 4 },
        reward: { scheme: 'search-r1' },
        rl: { nAgent: 1 },
      });
      const { adapters: _, ...searcher } = config;
      const result = await harvestDemonstrations({
        prompts: [{ ...prompt, reference: 'vell' }],
        ports: { searchEngine, generator, judge: createRuleJudge() },
        tokenizer: createProtocolTokenizer(),
        ...(chatFormat && { chatFormat }),
        searcher,
        keepPerQuestion: 1,
        firstSuccess: true,
      });
      expect(result.solved).toBe(1);
      const [t] = result.trajectories;
      expect(t!.retrievedBasenames).toEqual(['zorvel_people.txt', 'zorvel_capital.txt']);
      expect(t!.finalAnswer).toBe('Vell');
      expect(t!.rewardDetail?.components.formatPassed).toBe(true);
      // The token ids carry the chat template; the protocol's text does not.
      const read = createProtocolTokenizer().decode(t!.fullInputIds.slice(t!.promptLength));
      expect(read.includes('<|im_start|>user')).toBe(chatFormat !== undefined);
      expect(t!.generatedText).not.toContain('<|im_');
    },
  );
  it("answer mode with several accepted answers (Search-R1's golden_answers): writes the one the pages read hold, kept under the exact-match reward", async () => {
    const config = parseSearcherConfig({
      episode: { mode: 'answer', maxTurns: 4 },
      reward: { scheme: 'search-r1', searchR1Reward: 'exact-match' },
      rl: { nAgent: 1 },
    });
    const { adapters: _, ...searcher } = config;
    const result = await harvestDemonstrations({
      // A golden_answers row: the reference is the answers joined, which no page writes.
      prompts: [{ ...prompt, reference: 'Velltown | vell', answers: ['Velltown', 'vell'] }],
      ports: { searchEngine, generator, judge: createRuleJudge() },
      tokenizer: createProtocolTokenizer(),
      searcher,
      keepPerQuestion: 1,
      firstSuccess: true,
    });
    expect(result.solved).toBe(1);
    expect(result.trajectories[0]!.finalAnswer).toBe('Vell');
    expect(result.trajectories[0]!.reward).toBe(1);
  });
});

describe('referenceAsRead', () => {
  it('finds the reference in what was read, case and spacing aside, whole words only, in the spelling read', () => {
    const read = ['Zorvel people: the Parisian quarter.', 'The  capital is  new\nVell  City, by the sea.'];
    expect(referenceAsRead('vell city', read)).toBe('Vell City');
    expect(referenceAsRead('Paris', read)).toBeNull();
    expect(referenceAsRead('Parisian', read)).toBe('Parisian');
    expect(referenceAsRead('a.b (c)', ['it is a.b (c) here'])).toBe('a.b (c)');
    expect(referenceAsRead('a.b (c)', ['it is axb (c) here'])).toBeNull();
    expect(referenceAsRead(' - ', read)).toBeNull();
  });
});
