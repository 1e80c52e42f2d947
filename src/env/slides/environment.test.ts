import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedPolicy } from '../../adapters/scripted-policy/scripted-policy';
import { closeSearcherContainer, createSearcherContainer, resolveSearcher } from '../../container';
import type { PolicyBackend } from '../../ports/policy-backend';
import { SLIDE_INSTRUCTIONS, slideEnvironmentAdapters } from './adapters-config';
import { buildSlideEnvironment, type SlideEnvironment } from './build';
import { locationBinsToBox, parseRegionMarks } from '../../core/protocol/location';
import { cropFigures } from '../../run/crop-outcome';
import { createOracleScript } from './oracle';

let dir = '';
let env: SlideEnvironment;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-env-'));
  env = await buildSlideEnvironment(dir, { seed: 9, decks: 12, smallPrintRate: 0.5 });
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const episode = {
  instructions: SLIDE_INSTRUCTIONS,
  maxTurns: 4,
  maxTurnTokens: 64,
  maxContextTokens: 1024,
  observationMaxChars: 300,
};

/** A Searcher on the environment through the composition root, and a way to close what it opened. */
const containerFor = (policy: PolicyBackend, config: { reward?: { weights: 'default' } } = {}) =>
  createSearcherContainer(
    { episode, rl: { nAgent: 1 }, ...config, adapters: slideEnvironmentAdapters(env) },
    { ports: { policy } },
  );

describe('the offline slide environment', () => {
  it('rewards the oracle: precise search, crop of small print, the reader answers, the judge agrees', async () => {
    const container = containerFor(createScriptedPolicy({ script: createOracleScript(env.corpus) }), {
      reward: { weights: 'default' },
    });
    const searcher = await resolveSearcher(container);
    const questions = [
      ...env.corpus.questions.train.filter((q) => q.metadata.small).slice(0, 6),
      ...env.corpus.questions.train.filter((q) => !q.metadata.small).slice(0, 6),
    ];
    const batch = await searcher.collect(questions);
    const judged = batch.episodes.map((e) => e.trajectory.rewardDetail?.components.judgeScore);
    expect(judged.filter((s) => s === 1).length).toBeGreaterThanOrEqual(11);
    // Every small-print question is cropped, in the region that holds its fact; no question whose
    // fact was on the page is (src/run/crop-outcome.ts).
    const small = new Set(questions.slice(0, 6).map((q) => q.uid));
    const crops = batch.episodes.filter((e) => e.trajectory.turns.some((t) => t.crop));
    expect(crops.filter((e) => small.has(e.trajectory.promptUid))).toHaveLength(6);
    const figures = cropFigures(
      questions,
      batch.episodes.map((e) => e.trajectory),
    );
    expect(figures.rightRegionRate).toBe(1);
    expect(figures.crops.right).toBe(6);
    // Each crop named a region the page marked, and cut the grid box the page gave it.
    for (const { trajectory } of crops)
      for (const [i, turn] of trajectory.turns.entries()) {
        if (!turn.crop) continue;
        const name = /<bbox>([a-z ]+)<\/bbox>/.exec(turn.text)?.[1];
        const mark = parseRegionMarks(trajectory.turns[i - 1]!.observation).find((m) => m.label === name);
        expect(mark).toBeDefined();
        const box = locationBinsToBox(mark!.bins, 640, 360);
        // Whole pixels, rounded outwards (alignToPixels).
        expect(turn.crop!.sourceRegion).toEqual([
          Math.floor(box[0]),
          Math.floor(box[1]),
          Math.ceil(box[2]),
          Math.ceil(box[3]),
        ]);
      }
    expect(batch.episodes.every((e) => e.trajectory.terminated === 'complete')).toBe(true);
    await closeSearcherContainer(container);
  }, 60_000);

  it('fails small-print questions without the crop and vague searches mostly miss', async () => {
    const small = env.corpus.questions.train.filter((q) => q.metadata.small).slice(0, 6);
    const noCropContainer = containerFor(
      createScriptedPolicy({ script: createOracleScript(env.corpus, { skipCropRate: 1 }) }),
    );
    const batch = await (await resolveSearcher(noCropContainer)).collect(small);
    await closeSearcherContainer(noCropContainer);
    expect(
      batch.episodes.filter((e) => e.trajectory.rewardDetail?.components.judgeScore === 1).length,
    ).toBeLessThanOrEqual(1);
    // A vague query and no second search: mostly the wrong slide. With the second search (the precise query), mostly the right one.
    const vagueContainer = containerFor(
      createScriptedPolicy({ script: createOracleScript(env.corpus, { vagueRate: 1, skipResearchRate: 1 }) }),
    );
    const large = env.corpus.questions.train.filter((q) => !q.metadata.small).slice(0, 12);
    const vagueBatch = await (await resolveSearcher(vagueContainer)).collect(large);
    expect(
      vagueBatch.episodes.filter((e) => e.trajectory.rewardDetail?.components.judgeScore === 1).length,
    ).toBeLessThan(6);
    await closeSearcherContainer(vagueContainer);
    const researchContainer = containerFor(
      createScriptedPolicy({ script: createOracleScript(env.corpus, { vagueRate: 1 }) }),
    );
    const researchBatch = await (await resolveSearcher(researchContainer)).collect(large);
    expect(
      researchBatch.episodes.filter((e) => e.trajectory.rewardDetail?.components.judgeScore === 1).length,
    ).toBeGreaterThanOrEqual(9);
    // Each episode whose vague search missed searched again.
    expect(
      researchBatch.episodes.every(
        (e) =>
          e.trajectory.turns.filter((t) => t.search).length >= 2 ||
          e.trajectory.rewardDetail?.components.judgeScore === 1,
      ),
    ).toBe(true);
    expect(
      researchBatch.episodes.filter((e) => e.trajectory.turns.filter((t) => t.search).length >= 2).length,
    ).toBeGreaterThanOrEqual(6);
    await closeSearcherContainer(researchContainer);
  }, 60_000);
});
