import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedPolicy } from '../src/adapters/scripted-policy/scripted-policy';
import { createTfjsPolicy, type TfjsPolicy } from '../src/adapters/tfjs/policy';
import {
  closeSearcherContainer,
  createSearcherContainer,
  resolvePorts,
  resolveSearcher,
  type SearcherContainer,
} from '../src/container';
import { runEpisodes } from '../src/core/episode/run-episodes';
import { createVocabularyTokenizer } from '../src/core/protocol/tokenizer';
import { createRandom } from '../src/core/random';
import { expandGroups } from '../src/core/rl/groups';
import { runSft, sftExamples } from '../src/core/rl/policy-update';
import { slideEnvironmentAdapters } from '../src/env/slides/adapters-config';
import { buildSlideEnvironment, type SlideEnvironment } from '../src/env/slides/build';
import type { CorpusQuestion } from '../src/env/slides/corpus';
import { corpusVocabulary } from '../src/env/slides/slide-text';
import { createOracleScript } from '../src/env/slides/oracle';

let dir = '';
let env: SlideEnvironment;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'searcher-rl-learning-'));
  env = await buildSlideEnvironment(dir, {
    seed: 5,
    decks: 6,
    minSlides: 4,
    maxSlides: 5,
    smallPrintRate: 1,
  });
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const episode = {
  instructions: '',
  maxTurns: 4,
  maxTurnTokens: 48,
  maxContextTokens: 256,
  observationMaxChars: 300,
};

/** Greedy (temperature 0) episode on one question: did it crop, did the judge accept the answer? */
async function greedy(container: SearcherContainer, question: CorpusQuestion) {
  const searcher = await resolveSearcher(container, {
    episode: { ...episode, temperature: 0 },
    rl: { nAgent: 1 },
    reward: { weights: 'default' },
  });
  const trajectory = (await searcher.collect([question], { nAgent: 1 })).episodes[0]!.trajectory;
  return {
    cropped: trajectory.turns.some((t) => t.crop),
    judge: trajectory.rewardDetail?.components.judgeScore ?? null,
    text: trajectory.turns.map((t) => t.text).join(' '),
  };
}

describe('learning to crop (seeded, small)', () => {
  it('a policy warm-started without cropping solves a small-print question after a short RL run', async () => {
    // A small-print question whose precise query finds its slide first: only a crop is missing.
    const probe = createSearcherContainer(
      { episode, rl: { nAgent: 1 }, reward: { weights: 'default' }, adapters: slideEnvironmentAdapters(env) },
      {
        ports: {
          policy: createScriptedPolicy({
            // The run's tokenizer: a page's regions in bytes would not fit the 256-token context.
            tokenizer: createVocabularyTokenizer(corpusVocabulary(env.corpus)),
            script: createOracleScript(env.corpus),
          }),
        },
      },
    );
    const candidates = env.corpus.questions.train.filter((q) => q.metadata.small);
    const solved = (await (await resolveSearcher(probe)).collect(candidates)).episodes.filter(
      (e) => e.trajectory.rewardDetail?.components.judgeScore === 1,
    );
    await closeSearcherContainer(probe);
    const question = candidates.find((q) => q.uid === solved[0]!.trajectory.promptUid)!;

    const policy: TfjsPolicy = await createTfjsPolicy(
      {
        model: { layers: 1, width: 32, heads: 2, contextLength: 256 },
        seed: 3,
        backend: 'cpu',
        optimizer: { learningRate: 1e-2, weightDecay: 0 },
      },
      { tokenizer: createVocabularyTokenizer(corpusVocabulary(env.corpus)) },
    );
    const container = createSearcherContainer(
      {
        episode: { ...episode, temperature: 0.7 },
        rl: { nAgent: 8, loss: { kind: 'ppo_clip', clipLow: 0.2, clipHigh: 0.28 } },
        reward: { weights: 'default' },
        adapters: slideEnvironmentAdapters(env),
      },
      { ports: { policy } },
    );
    try {
      // Demonstrations that mostly skip the crop of the golden page (searching on instead): the
      // warm-started policy's greedy choice is not to crop there. With the region in
      // four location tokens (corpusVocabulary), a few crops among 16 demonstrations are already copied well.
      const ports = await resolvePorts(container);
      const oracle = createScriptedPolicy({
        tokenizer: policy.tokenizer,
        script: createOracleScript(env.corpus, { skipCropRate: 0.75, seed: 1 }),
      });
      const demos = await runEpisodes(
        expandGroups([question], 16),
        { policy: oracle, searchEngine: ports.searchEngine, imageOps: ports.imageOps },
        { config: episode },
      );
      const cropsOfGolden = demos.filter((d) =>
        d.trajectory.turns.some((t) => t.crop?.basename === question.goldenBasenames[0]),
      ).length;
      expect(cropsOfGolden).toBeGreaterThan(0);
      expect(cropsOfGolden).toBeLessThan(6);
      await runSft(
        policy,
        sftExamples(demos.map((d) => d.trajectory)),
        { epochs: 30, batchSize: 8 },
        { random: createRandom(1) },
      );
      const start = await greedy(container, question);
      // Not solved: no crop, and a wrong answer or none (searching on until the turn budget ends it).
      expect(start.cropped).toBe(false);
      expect(start.judge ?? 0).toBe(0);

      const searcher = await resolveSearcher(container);
      policy.resetOptimizer({ learningRate: 3e-3 });
      let end = start;
      for (let step = 1; step <= 15 && !(end.cropped && end.judge === 1); step++) {
        await searcher.update(await searcher.collect([question], { step }));
        if (step % 3 === 0) end = await greedy(container, question);
      }
      expect(end).toMatchObject({ cropped: true, judge: 1 });
    } finally {
      await closeSearcherContainer(container);
      policy.dispose();
    }
  }, 480_000);
});
