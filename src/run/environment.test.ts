import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { resolvePorts } from '../container';
import { neutraliseTags } from '../core/protocol/observation';
import { generateSlideCorpus } from '../env/slides/corpus';
import { perceivedSlideText } from '../env/slides/slide-text';
import { parseRunConfig } from './config';
import { openRun } from './session';

const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** A tiny slide run in a fresh folder (3 decks of 5 slides, all with small print), `sft` as given. */
async function tinySlideRun(runId: string, sft: Record<string, unknown>, contextLength = 256) {
  const root = await mkdtemp(join(tmpdir(), 'searcher-rl-env-'));
  dirs.push(root);
  return parseRunConfig({
    runsDir: join(root, 'runs'),
    runId,
    corpus: { decks: 3, minSlides: 5, maxSlides: 5, smallPrintRate: 1, cacheDir: join(root, 'corpus') },
    policy: { layers: 1, width: 16, heads: 2, contextLength, backend: 'wasm' },
    searcher: { episode: { maxContextTokens: contextLength } },
    sft,
  });
}

describe('the slide environment of a run', () => {
  it('shows every page of the default corpus whole: the longest perceived text fits observationMaxChars', () => {
    const limit = parseRunConfig({}).searcher.episode.observationMaxChars;
    for (const seed of [1, 2, 3]) {
      const corpus = generateSlideCorpus({ seed });
      const longest = Math.max(
        ...corpus.decks.flatMap((d) => d.slides).map((s) => neutraliseTags(perceivedSlideText(s)).length),
      );
      // A truncated page would hide its last lines (pointer lines and small-print marks among them).
      expect(longest).toBeLessThanOrEqual(limit);
    }
  });

  it("demonstrates with the oracle over the run's ports, not with the run's own (untrained) policy", async () => {
    const root = await mkdtemp(join(tmpdir(), 'searcher-rl-env-'));
    dirs.push(root);
    const config = parseRunConfig({
      runsDir: join(root, 'runs'),
      runId: 'demos',
      corpus: { decks: 3, minSlides: 5, maxSlides: 5, cacheDir: join(root, 'corpus') },
      policy: { layers: 1, width: 16, heads: 2, contextLength: 256, backend: 'wasm' },
      // The episode's window within the policy's 256 tokens (a run refuses a larger one before it starts).
      searcher: { episode: { maxContextTokens: 256 } },
      // No crop practice: the count below is the demonstrations' own (cropTurnMask is tested below).
      sft: { demonstrator: 'oracle', smallPrintShare: 0.75, cropPractice: 0 },
    });
    const session = await openRun(config, { kind: 'fresh' });
    try {
      const ports = await resolvePorts(session.container);
      const demos = await session.env.demonstrations!(6, session.policy, ports, config.searcher.episode);
      expect(demos).toHaveLength(6);
      // The oracle searches first, with the question's entity, and ends with search_complete.
      for (const t of demos) {
        expect(t.turns[0]!.action?.type).toBe('search');
        expect(t.terminated).toBe('complete');
      }
      // Small print takes its share (sft.smallPrintShare, here 0.75) of the demonstrations even where the
      // split holds fewer such questions: they are repeated, each repetition its own rollout.
      const small = new Set(
        session.env.train.filter((q) => (q.metadata as { small?: boolean }).small).map((q) => q.uid),
      );
      const large = session.env.train.length - small.size;
      expect(small.size).toBeGreaterThan(0);
      // More small-print demonstrations than the split holds, and no more large-print ones than it holds.
      const count = 4 * small.size + 2;
      expect(Math.round(count * 0.75)).toBeGreaterThan(small.size);
      expect(count - Math.round(count * 0.75)).toBeLessThanOrEqual(large);
      const many = await session.env.demonstrations!(count, session.policy, ports, config.searcher.episode);
      expect(many).toHaveLength(count);
      expect(many.filter((t) => small.has(t.promptUid))).toHaveLength(Math.round(count * 0.75));
    } finally {
      await session.close();
    }
  }, 120_000);

  it('demonstrates by rejection sampling by default: only episodes the judge scores fully right, from a golden page', async () => {
    const config = await tinySlideRun('harvest', { cropPractice: 0 }, 192);
    expect(config.sft!.demonstrator).toBe('rejection-sampling');
    expect(config.sft!.vagueRate).toBe(0);
    expect(config.sft!.skipResearchRate).toBe(0);
    const session = await openRun(config, { kind: 'fresh' });
    try {
      const ports = await resolvePorts(session.container);
      const count = session.env.train.length;
      const demos = await session.env.demonstrations!(count, session.policy, ports, config.searcher.episode);
      expect(demos.length).toBeGreaterThan(0);
      expect(demos.length).toBeLessThanOrEqual(count);
      for (const t of demos) {
        expect(t.turns[0]!.action?.type).toBe('search');
        expect(t.terminated).toBe('complete');
        expect(t.rewardDetail?.components.judgeScore).toBe(1);
        expect(t.retrievedBasenames.some((b) => t.goldenBasenames.includes(b))).toBe(true);
      }
      // Every slide has small print here: some kept episodes crop the region that holds the fact.
      expect(demos.some((t) => t.turns.some((turn) => turn.crop))).toBe(true);
    } finally {
      await session.close();
    }
  }, 120_000);

  it('with sft.cropPracticeQuestions, practises crops from the questions after the demonstrations sample too', async () => {
    const practised = async (runId: string, cropPracticeQuestions: number) => {
      const config = await tinySlideRun(runId, { cropPractice: 60, cropPracticeQuestions });
      const session = await openRun(config, { kind: 'fresh' });
      try {
        const ports = await resolvePorts(session.container);
        const count = Math.floor(session.env.train.length / 2);
        const all = await session.env.demonstrations!(count, session.policy, ports, config.searcher.episode);
        const practice = all.slice(all.length - 60);
        const demos = all.slice(0, all.length - 60);
        return { demos, questions: new Set(practice.map((t) => t.promptUid)) };
      } finally {
        await session.close();
      }
    };
    const alone = await practised('alone', 0);
    const more = await practised('more', 1000);
    // The demonstrations are the same; the practice covers more questions, and not only theirs.
    expect(more.demos.map((t) => t.promptUid)).toEqual(alone.demos.map((t) => t.promptUid));
    expect(more.questions.size).toBeGreaterThan(alone.questions.size);
    const demonstrated = new Set(alone.demos.map((t) => t.promptUid));
    expect([...more.questions].some((uid) => !demonstrated.has(uid))).toBe(true);
    for (const uid of alone.questions) expect(demonstrated.has(uid)).toBe(true);
  }, 120_000);

  it("with sft.thinkBeforeCrop, thinks the page's pointer line for the asked fact before each crop and crops the region it names", async () => {
    const config = await tinySlideRun('think', { cropPractice: 0, thinkBeforeCrop: true });
    const session = await openRun(config, { kind: 'fresh' });
    try {
      const ports = await resolvePorts(session.container);
      const demos = await session.env.demonstrations!(
        session.env.train.length,
        session.policy,
        ports,
        config.searcher.episode,
      );
      const crops = demos.flatMap((t) => t.turns.filter((turn) => turn.crop));
      expect(crops.length).toBeGreaterThan(0);
      for (const turn of crops) {
        const match = /^<think>[^<]*: see ([a-z ]+)<\/think><bbox>([a-z ]+)<\/bbox>$/.exec(turn.text.trim());
        expect(match).not.toBeNull();
        expect(match![2]).toBe(match![1]);
      }
    } finally {
      await session.close();
    }
  }, 120_000);
});

describe('cropTurnMask', () => {
  it('keeps the loss mask of the turn that writes <bbox> and clears every other turn', async () => {
    const { cropTurnMask } = await import('./environment');
    const BBOX = 9;
    // prompt (0), a search turn (1), an observation (0), the crop turn (1), an observation (0), search_complete (1)
    const ids = [1, 2, 3, 4, 5, 9, 6, 7, 8, 3, 3];
    const mask = [0, 1, 1, 0, 1, 1, 1, 0, 0, 1, 1];
    expect(cropTurnMask(ids, mask, BBOX)).toEqual([0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0]);
  });

  it('is null without a crop turn or without a <bbox> token', async () => {
    const { cropTurnMask } = await import('./environment');
    expect(cropTurnMask([1, 2, 3], [0, 1, 1], 9)).toBeNull();
    expect(cropTurnMask([1, 9, 3], [0, 1, 1], undefined)).toBeNull();
    // a <bbox> token the policy did not write (an observation) is not a crop turn
    expect(cropTurnMask([9, 2, 3], [0, 1, 1], 9)).toBeNull();
  });
});
