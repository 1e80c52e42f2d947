import { describe, expect, it } from 'vitest';
import { createMockSearchEngine, createRawImage, createRawImageOps } from '../../adapters/mock/index';
import { createScriptedPolicy } from '../../adapters/scripted-policy/index';
import { mapToSource, shownSize } from './image-frame';
import { ANSWER_INSTRUCTIONS } from './prompt';
import { runEpisodes } from './run-episodes';
import { checkTokenAccounting, one, pages, prompt } from '../../../test/support/episodes';

describe('runEpisodes', () => {
  it('runs search then search_complete, keeping token ids, positions and the loss mask', async () => {
    const policy = createScriptedPolicy({
      script: [
        '<think>find revenue</think>\n<search>acme revenue 2019</search>',
        '<think>enough</think>\n<search_complete>true</search_complete>',
      ],
    });
    const engine = createMockSearchEngine({ pages });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: engine });
    const t = episode!.trajectory;
    expect(t.terminated).toBe('complete');
    expect(t.retrievedBasenames).toEqual(['acme_2.png']);
    expect(t.turns).toHaveLength(2);
    expect(t.turns[0]!.search).toMatchObject({
      query: 'acme revenue 2019',
      chosenBasename: 'acme_2.png',
      chosenRank: 1,
      goldenRanks: [1],
    });
    expect(t.turns[0]!.observation).toContain('[page acme_2.png (200x100)]');
    expect(t.generatedText).toContain('<information>');
    expect(t.sampleId).toBe('g#0');
    checkTokenAccounting(t);
    // Observation tokens are in the sequence with mask 0.
    const infoId = policy.tokenizer.specialTokenId('<information>')!;
    const infoPosition = t.fullInputIds.indexOf(infoId, t.promptLength);
    expect(infoPosition).toBeGreaterThan(0);
    expect(t.lossMask[infoPosition]).toBe(0);
    expect(engine.calls).toEqual([{ query: 'acme revenue 2019', topK: 10 }]);
  });

  it('pages down the ranking when a query repeats, and says when nothing new is left', async () => {
    const policy = createScriptedPolicy({
      script: [
        '<search>acme revenue</search>',
        '<search>acme revenue</search>',
        '<search>acme revenue</search>',
        '<search>acme revenue</search>',
        '<search_complete>true</search_complete>',
      ],
    });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    const t = episode!.trajectory;
    expect(t.retrievedBasenames).toEqual(['acme_2.png', 'acme_3.png', 'acme_1.png']);
    expect(t.turns[3]!.observation).toMatch(/no further results/);
    expect(t.terminated).toBe('complete');
  });

  it('answers "no results" for an empty result list, without crashing', async () => {
    const policy = createScriptedPolicy({
      script: ['<search>zebra</search>', '<search_complete>true</search_complete>'],
    });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    expect(episode!.trajectory.turns[0]!.observation).toMatch(/no results for "zebra"/);
  });

  it('turns an invalid action into a corrective observation that counts against maxTurns', async () => {
    const policy = createScriptedPolicy({
      script: ['I will just answer: 4.5B', '<search_complete>true</search_complete>'],
    });
    const [episode] = await runEpisodes(one(), { policy, searchEngine: createMockSearchEngine({ pages }) });
    const t = episode!.trajectory;
    expect(t.invalidActions).toBe(1);
    expect(t.turns[0]!.invalid?.reason).toBe('no_action');
    expect(t.turns[0]!.observation).toMatch(/Your previous action is invalid/);
    expect(policy.calls.append[0]!.tokens).toBeGreaterThan(0);
    expect(t.terminated).toBe('complete');
  });

  it('closes at maxTurns with a forced completion that is not policy output (mask 0)', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme</search>'] });
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages }) },
      { config: { maxTurns: 3 } },
    );
    const t = episode!.trajectory;
    expect(t.terminated).toBe('budget');
    expect(t.turns).toHaveLength(4);
    expect(t.turns[3]).toMatchObject({ forced: true, action: { type: 'search_complete' } });
    expect(t.generatedText.endsWith('<search_complete>true</search_complete>')).toBe(true);
    const lastId = t.fullInputIds[t.fullInputIds.length - 1]!;
    expect(policy.tokenizer.tokenText(lastId)).toBe('</search_complete>');
    expect(t.lossMask[t.lossMask.length - 1]).toBe(0);
    checkTokenAccounting(t);
  });

  it('ends with `context` when the sequence outgrows maxContextTokens', async () => {
    const policy = createScriptedPolicy({ script: ['<search>acme revenue 2019</search>'] });
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages }) },
      { config: { maxContextTokens: 700, maxTurns: 10 } },
    );
    expect(episode!.trajectory.terminated).toBe('context');
    checkTokenAccounting(episode!.trajectory);
  });

  it('rejects a bbox outside the image as shown to the policy (not as stored)', async () => {
    const policy = createScriptedPolicy({
      script: [
        '<search>acme revenue 2019</search>',
        '<bbox>[50, 25, 150, 75]</bbox>',
        '<search_complete>true</search_complete>',
      ],
    });
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages }), imageOps: createRawImageOps() },
      { config: { policyImageMaxSide: 100 } },
    );
    const t = episode!.trajectory;
    expect(t.turns[0]!.observation).toContain('(100x50)');
    expect(t.turns[1]!.invalid?.reason).toBe('bbox_outside_image');
    expect(t.turns[1]!.observation).toMatch(/100x50/);
  });

  it('crops a region the page marks by its name, and names the marks when asked for one it lacks', async () => {
    // Marks: `[label at <x1_k><y1_k><x2_k><y2_k>]`, bins of 32 per side, so any shown size.
    const marked = [
      {
        basename: 'acme_2.png',
        text: 'Acme revenue 2019\n[footnote at <x1_8><y1_16><x2_24><y2_32>]\n[source at <x1_0><y1_0><x2_4><y2_4>]',
        image: createRawImage(200, 100),
      },
    ];
    const policy = createScriptedPolicy({
      script: [
        '<search>acme revenue 2019</search>',
        '<bbox>contact line</bbox>',
        '<bbox>Footnote</bbox>',
        '<bbox>footnote</bbox>',
      ],
    });
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages: marked }), imageOps: createRawImageOps() },
      { config: { policyImageMaxSide: 100, maxTurns: 4 } },
    );
    const t = episode!.trajectory;
    expect(t.turns[1]!.invalid).toEqual({
      reason: 'bbox_unknown_region',
      message: 'the image you were shown marks no region named "contact line"; it marks footnote, source',
    });
    // Shown at 100x50: bins 8..24 x 16..32 are [25, 25, 75, 50] shown, [50, 50, 150, 100] of the page.
    expect(t.turns[2]!.crop).toMatchObject({ bbox: [25, 25, 75, 50], sourceRegion: [50, 50, 150, 100] });
    // A crop marks nothing: a name now has no region to resolve to.
    expect(t.turns[3]!.invalid?.message).toBe(
      'a crop marks no regions, so "footnote" names none; write a box in the crop\'s pixels, or search again',
    );
    checkTokenAccounting(t);
  });

  it('offers only the marks the policy was shown: none on an unmarked page, none cut off, none named twice', async () => {
    const text =
      'Acme revenue 2019\n[source at <x1_0><y1_0><x2_4><y2_4>]\n[Source at <x1_4><y1_4><x2_8><y2_8>]\n[date  line at <x1_8><y1_16><x2_24><y2_32>]';
    const crop = async (name: string, pageText: string, observationMaxChars = 400) => {
      const policy = createScriptedPolicy({
        script: ['<search>acme revenue 2019</search>', `<bbox>${name}</bbox>`],
      });
      const page = { basename: 'acme_2.png', text: pageText, image: createRawImage(200, 100) };
      const [episode] = await runEpisodes(
        one(),
        { policy, searchEngine: createMockSearchEngine({ pages: [page] }), imageOps: createRawImageOps() },
        { config: { maxTurns: 2, observationMaxChars } },
      );
      return episode!.trajectory.turns[1]!;
    };
    // Labels compare as names do: case, runs of spaces.
    expect((await crop('Date line', text)).crop?.sourceRegion).toEqual([50, 50, 150, 100]);
    // Two marks of one name: the name does not say which.
    expect((await crop('source', text)).invalid?.message).toMatch(
      /^the image you were shown marks 2 regions named "source", so the name does not say which; write the box instead: bbox must be four numbers/,
    );
    // Cut off by the observation's limit: the policy never saw the mark, so it is not offered.
    const cut = await crop('date line', text, text.indexOf('[date') + 12);
    expect(cut.observation).not.toContain('[date  line at');
    expect(cut.invalid?.message).toBe(
      'the image you were shown marks no region named "date line"; it marks source',
    );
    // A page with no marks: the message says how to write a box.
    expect((await crop('footnote', 'Acme revenue 2019')).invalid?.message).toMatch(
      /^the image you were shown marks no regions, so "footnote" names none; bbox must be four numbers/,
    );
  });

  it("shows a long page's lines the search names with observationExcerpt: query, its start otherwise", async () => {
    const table = ['| country | founded |', '| --- | --- |']
      .concat(['Zorzor', 'Drumab', 'Quarin', 'Velzor'].map((c, i) => `| ${c} | ${1400 + i} |`))
      .join('\n');
    const observe = async (observationExcerpt?: 'start' | 'query') => {
      const policy = createScriptedPolicy({ script: ['<search>Velzor founded</search>'] });
      const page = { basename: 'founded.txt', text: table };
      const [episode] = await runEpisodes(
        one(),
        { policy, searchEngine: createMockSearchEngine({ pages: [page] }) },
        {
          config: { maxTurns: 1, observationMaxChars: 50, ...(observationExcerpt && { observationExcerpt }) },
        },
      );
      return episode!.trajectory.turns[0]!.observation;
    };
    expect(await observe('query')).toContain('| country | founded |\n…\n| Velzor | 1403 |');
    expect(await observe()).not.toContain('Velzor');
    expect(await observe('start')).toBe(await observe());
    await expect(
      runEpisodes(
        one(),
        {
          policy: createScriptedPolicy({ script: ['<search>x</search>'] }),
          searchEngine: createMockSearchEngine({ pages }),
        },
        {
          config: { observationExcerpt: 'middle' as never },
        },
      ),
    ).rejects.toThrow(/episode\.observationExcerpt.*'start' or 'query'/);
  });

  it('maps bbox coordinates back to source pixels', () => {
    // A 200x100 page shown at 100x50: [10, 10, 50, 30] is [20, 20, 100, 60] in the page.
    expect(
      mapToSource([10, 10, 50, 30], { region: [0, 0, 200, 100], shownWidth: 100, shownHeight: 50 }),
    ).toEqual([20, 20, 100, 60]);
    // A crop of region [20, 20, 100, 60] shown at 768x384: [0, 0, 384, 192] is its top-left quarter.
    expect(
      mapToSource([0, 0, 384, 192], { region: [20, 20, 100, 60], shownWidth: 768, shownHeight: 384 }),
    ).toEqual([20, 20, 60, 40]);
    expect(shownSize(200, 100, 100)).toEqual({ width: 100, height: 50 });
    expect(shownSize(200, 100, null)).toEqual({ width: 200, height: 100 });
  });

  it('records crops and crops of crops in source pixels', async () => {
    const policy = createScriptedPolicy({
      // The 80x40 crop is enlarged to 768x384 but shown, like every image, at most 100 wide: 100x50.
      script: [
        '<search>acme revenue 2019</search>',
        '<bbox>[10, 10, 50, 30]</bbox>',
        '<bbox>[0, 0, 50, 25]</bbox>',
        '<search_complete>true</search_complete>',
      ],
    });
    const imageOps = createRawImageOps();
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages }), imageOps },
      { config: { policyImageMaxSide: 100, cropMinOutputSide: 768 } },
    );
    const t = episode!.trajectory;
    expect(t.turns[1]!.crop).toEqual({
      bbox: [10, 10, 50, 30],
      basename: 'acme_2.png',
      sourceRegion: [20, 20, 100, 60],
      shownWidth: 100,
      shownHeight: 50,
    });
    expect(t.turns[2]!.crop?.sourceRegion).toEqual([20, 20, 60, 40]);
    // Both crops were cut from the original page, not from the previous crop.
    expect(imageOps.calls.map((c) => [c.width, c.height, c.bbox])).toEqual([
      [200, 100, [20, 20, 100, 60]],
      [200, 100, [20, 20, 60, 40]],
    ]);
    expect(episode!.evidence.map((e) => e.kind)).toEqual(['page', 'crop', 'crop']);
    expect(episode!.evidence[1]!.image!.width).toBe(768);
    expect(t.evidence[1]).toMatchObject({
      kind: 'crop',
      basename: 'acme_2.png',
      sourceRegion: [20, 20, 100, 60],
    });
  });

  it('clamps a mapped bbox to the page and stores whole pixels, the region that was cut', async () => {
    // A 1000x2998 page shown at 111x333: the full box maps to y2 = 2998.0000000000005 in floats.
    const tall = [{ basename: 'tall.png', text: 'acme revenue 2019', image: createRawImage(1000, 2998) }];
    const policy = createScriptedPolicy({
      script: [
        '<search>acme revenue 2019</search>',
        '<bbox>[0, 0, 111, 333]</bbox>',
        '<bbox>[0.5, 0.5, 10.2, 10.7]</bbox>',
        '<search_complete>true</search_complete>',
      ],
    });
    const imageOps = createRawImageOps();
    const [episode] = await runEpisodes(
      one(),
      { policy, searchEngine: createMockSearchEngine({ pages: tall }), imageOps },
      { config: { policyImageMaxSide: 333 } },
    );
    const t = episode!.trajectory;
    expect(t.terminated).toBe('complete');
    expect(t.turns[1]!.crop?.sourceRegion).toEqual([0, 0, 1000, 2998]);
    const second = t.turns[2]!.crop!.sourceRegion;
    expect(second.every((v) => Number.isInteger(v))).toBe(true);
    expect(imageOps.calls.map((c) => c.bbox)).toEqual([t.turns[1]!.crop!.sourceRegion, second]);
  });

  it('treats a bbox before any image, or on a text-only page, as invalid ("search first")', async () => {
    const policy = createScriptedPolicy({
      script: [
        '<bbox>[0, 0, 10, 10]</bbox>',
        '<search>forecast</search>',
        '<bbox>[0, 0, 10, 10]</bbox>',
        '<search_complete>true</search_complete>',
      ],
    });
    const [episode] = await runEpisodes(one(), {
      policy,
      searchEngine: createMockSearchEngine({ pages }),
      imageOps: createRawImageOps(),
    });
    const t = episode!.trajectory;
    expect(t.turns[0]!.invalid?.reason).toBe('bbox_no_image');
    expect(t.turns[0]!.observation).toMatch(/search first/);
    expect(t.turns[2]!.invalid?.reason).toBe('bbox_no_image');
  });

  it('ends only the failing episode with `error` when its search fails', async () => {
    const engine = createMockSearchEngine({
      pages,
      failWith: (q) => (q.includes('boom') ? new Error('index offline') : undefined),
    });
    const policy = createScriptedPolicy({
      script: [
        ['<search>boom</search>'],
        ['<search>acme revenue 2019</search>', '<search_complete>true</search_complete>'],
      ],
    });
    const episodes = await runEpisodes(
      [
        { prompt, groupId: 'g', rolloutIndex: 0 },
        { prompt, groupId: 'g', rolloutIndex: 1 },
      ],
      { policy, searchEngine: engine },
    );
    expect(episodes[0]!.trajectory.terminated).toBe('error');
    expect(episodes[0]!.trajectory.error).toMatchObject({ stage: 'search' });
    expect(episodes[0]!.trajectory.error!.message).toMatch(/searchEngine 'mock' threw Error: index offline/);
    expect(episodes[1]!.trajectory.terminated).toBe('complete');
  });

  it('decodes every active rollout in one generateTurn call per turn', async () => {
    const policy = createScriptedPolicy({
      script: [
        ['<search>acme</search>', '<search_complete>true</search_complete>'],
        ['<search>acme</search>', '<search>revenue</search>', '<search_complete>true</search_complete>'],
      ],
    });
    await runEpisodes(
      [
        { prompt, groupId: 'g', rolloutIndex: 0 },
        { prompt, groupId: 'g', rolloutIndex: 1 },
      ],
      { policy, searchEngine: createMockSearchEngine({ pages }) },
    );
    expect(policy.calls.generateTurn.map((c) => c.rolloutIds)).toEqual([[0, 1], [0, 1], [1]]);
    expect(policy.calls.generateTurn[0]!.options.stopAfter).toContain('</search>');
  });

  it('rejects a policy answer in searcher mode and accepts it in answer mode', async () => {
    const script = ['<search>acme revenue 2019</search>', '<answer>4.5 billion dollars</answer>'];
    const [searcher] = await runEpisodes(
      one(),
      { policy: createScriptedPolicy({ script }), searchEngine: createMockSearchEngine({ pages }) },
      { config: { maxTurns: 2 } },
    );
    expect(searcher!.trajectory.turns[1]!.invalid?.reason).toBe('action_not_allowed');
    const [answer] = await runEpisodes(
      one(),
      { policy: createScriptedPolicy({ script }), searchEngine: createMockSearchEngine({ pages }) },
      { config: { mode: 'answer' } },
    );
    expect(answer!.trajectory.terminated).toBe('answer');
    expect(answer!.trajectory.finalAnswer).toBe('4.5 billion dollars');
  });

  it("refuses a bbox in answer mode, as Search-R1's format check does, and never advertises it", async () => {
    const script = [
      '<search>acme revenue 2019</search>',
      '<bbox>[0, 0, 10, 10]</bbox>',
      '<answer>4.5 billion dollars</answer>',
    ];
    const imageOps = createRawImageOps();
    const [answer] = await runEpisodes(
      one(),
      { policy: createScriptedPolicy({ script }), searchEngine: createMockSearchEngine({ pages }), imageOps },
      { config: { mode: 'answer' } },
    );
    const t = answer!.trajectory;
    expect(t.turns[1]!.invalid?.reason).toBe('action_not_allowed');
    expect(t.turns[1]!.invalid?.message).toBe('<bbox> is not an action here; use <search> or <answer>');
    expect(t.turns[1]!.observation).not.toMatch(/bbox tag/);
    expect(imageOps.calls).toHaveLength(0);
    expect(ANSWER_INSTRUCTIONS).not.toMatch(/bbox|crop/i);
  });

  it('stops at an abort', async () => {
    const controller = new AbortController();
    const policy = createScriptedPolicy({
      script: (ctx) => {
        if (ctx.turn === 1) controller.abort();
        return '<search>acme</search>';
      },
    });
    await expect(
      runEpisodes(
        one(),
        { policy, searchEngine: createMockSearchEngine({ pages }) },
        { signal: controller.signal },
      ),
    ).rejects.toThrow(/abort/i);
  });
});
