import { createScriptedPolicy } from '../../adapters/scripted-policy/index';
import type { SearcherConfig } from '../../config';
import { runEpisodes } from '../../core/episode/run-episodes';
import { createRandom, permutation, RANDOM_STREAMS } from '../../core/random';
import { expandGroups } from '../../core/rl/groups';
import type { Trajectory } from '../../core/trajectory/trajectory';
import type { PromptRecord } from '../../core/types';
import { slideEnvironmentAdapters } from '../../env/slides/adapters-config';
import { buildSlideEnvironment, type SlideEnvironment } from '../../env/slides/build';
import { createOracleScript, type OracleOptions } from '../../env/slides/oracle';
import { pointedRole } from '../../env/slides/regions';
import { corpusVocabulary } from '../../env/slides/slide-text';
import type { ImageOps } from '../../ports/image-ops';
import type { SearchEngine } from '../../ports/search-engine';
import type { SearcherPorts } from '../../searcher';
import { genericBaselines, naiveRagScript } from '../baseline-scripts';
import type { RunConfig } from '../config';
import { progressOf, type RunOptions } from '../progress';
import { harvestSampled } from './harvest';
import type { DemonstrationTarget, EnvironmentDefinition, RunEnvironment } from './types';

/**
 * The offline slide environment (the default of a run and of the server): a generated corpus of
 * slide decks, its SQLite FTS5 index, sharp crops, the frozen slide reader and the rule judge.
 */
export const slideEnvironmentDefinition: EnvironmentDefinition = {
  kind: 'slides',
  choosesRun: () => true,
  choosesServed: () => true,
  openRun: slideEnvironment,
  async openServed(choice) {
    const {
      cacheDir,
      split = 'train',
      ...corpus
    } = choice.slides ?? { cacheDir: '.cache/searcher-rl/slides' };
    const env = await buildSlideEnvironment(cacheDir, corpus);
    return { adapters: slideEnvironmentAdapters(env), tasks: env.corpus.questions[split] };
  },
};

async function slideEnvironment(config: RunConfig, options: RunOptions): Promise<RunEnvironment> {
  const { cacheDir, ...corpus } = config.corpus!;
  let rendering: ReturnType<typeof progressOf> | null = null;
  const env = await buildSlideEnvironment(cacheDir, corpus, {
    onProgress: (done, total) => {
      rendering ??= progressOf(options, 'rendering slides', total);
      rendering.update(done);
    },
  });
  (rendering as ReturnType<typeof progressOf> | null)?.done();
  const slides = env.corpus.decks.reduce((n, d) => n + d.slides.length, 0);
  const q = env.corpus.questions;
  options.onLog?.(
    `corpus: ${env.corpus.decks.length} decks, ${slides} slides, questions ${q.train.length} train / ${q.validation.length} validation / ${q.test.length} test (${env.rebuilt ? 'built' : 'cached'} in ${cacheDir})`,
  );
  return {
    kind: 'slides',
    train: q.train,
    all: [...q.train, ...q.validation, ...q.test],
    vocabulary: () => corpusVocabulary(env.corpus),
    adapters: slideEnvironmentAdapters(env),
    evaluation: (split = 'test') => ({ label: split, prompts: q[split], storeRun: `eval-${split}` }),
    demonstrations: (count, target, ports, episode, runOptions = options) =>
      config.sft?.demonstrator === 'oracle'
        ? slideDemonstrations(config, env, count, target, ports, episode)
        : harvestedSlideDemonstrations(config, env, count, target, ports, episode, runOptions),
    baselines: [
      ...genericBaselines(),
      {
        name: 'RAG + keyword rule',
        description:
          "naive RAG, then a crop of the region that the page's pointer line for the question's attribute names (`Employees 2015: see footnote`)",
        script: naiveRagScript((question, marks, page) => {
          const role = pointedRole(question, page);
          return role !== null && marks.includes(role) ? role : null;
        }),
      },
      {
        name: 'slide oracle',
        description:
          'the scripted oracle, which knows where each fact was drawn (a reference, not a baseline)',
        reference: true,
        script: createOracleScript(env.corpus, { maxTurns: config.searcher.episode.maxTurns }),
      },
    ],
    corpus: { cacheDir, slidesDir: env.slidesDir },
    dbPath: env.dbPath,
  };
}

/**
 * The default warm start of a slide run (`sft.demonstrator: rejection-sampling`): the generic
 * demonstrator's successful episodes on `count` training questions (a seeded sample, as on your own
 * data), from what a dataset holds: the questions, references and golden pages, not where each
 * fact was drawn. Crop practice (`sft.cropPractice`) repeats its kept episodes that crop, trained
 * on the crop turn alone.
 */
async function harvestedSlideDemonstrations(
  config: RunConfig,
  env: SlideEnvironment,
  count: number,
  target: DemonstrationTarget,
  ports: Omit<SearcherPorts, 'policy'>,
  episode: SearcherConfig['episode'],
  options: RunOptions,
): Promise<Trajectory[]> {
  const sft = config.sft!;
  const { tokenizer } = target;
  const how = {
    ports,
    target,
    episode,
    keepPerQuestion: 1,
    firstSuccess: true,
    cropBy: sft.cropBy,
    thinkBeforeCrop: sft.thinkBeforeCrop,
    options,
  };
  const train = env.corpus.questions.train;
  const result = await harvestSampled(config, train, count, how);
  const bbox = tokenizer.specialTokenId('<bbox>');
  const cropsOf = (trajectories: readonly Trajectory[]) =>
    trajectories.flatMap((trajectory) => {
      const mask = cropTurnMask(trajectory.fullInputIds, trajectory.lossMask, bbox);
      return mask ? [{ ...trajectory, lossMask: mask }] : [];
    });
  const crops = cropsOf(result.trajectories);
  // Crop practice from more pages than the demonstrations read (`sft.cropPracticeQuestions`): the
  // training questions after the demonstrations' sample, whose kept crops join theirs.
  const extra = sft.cropPractice === 0 ? 0 : Math.min(sft.cropPracticeQuestions, train.length - count);
  const more =
    extra > 0
      ? cropsOf((await harvestSampled(config, train, extra, { ...how, skip: count })).trajectories)
      : [];
  const pool = [...crops, ...more];
  const practiceCount = pool.length === 0 ? 0 : (sft.cropPractice ?? Math.round(count / 2));
  const practice = Array.from({ length: practiceCount }, (_, i) => pool[i % pool.length]!);
  options.onLog?.(
    `demonstrations: ${result.trajectories.length} episodes kept from ${result.solved} of ${result.questions} training questions (rejection sampling: up to ${result.attempts} attempts a question until one succeeds, ${result.episodes} episodes; kept where ${result.criterion}), ${crops.length} of them crop; crop practice ${practiceCount}${more.length > 0 ? ` from ${pool.length} distinct crops (${more.length} from ${extra} more questions)` : ''}`,
  );
  return [...result.trajectories, ...practice];
}

/**
 * `sft.demonstrator: oracle`: the oracle's episodes on `count` training questions, a seeded sample of the split, not its first
 * rows (the split is sorted by id, deck by deck, and its first 2000 questions would leave the
 * policy never having seen half of the names).
 */
async function slideDemonstrations(
  config: RunConfig,
  env: SlideEnvironment,
  count: number,
  target: DemonstrationTarget,
  ports: { searchEngine: SearchEngine; imageOps: ImageOps },
  episode: SearcherConfig['episode'],
): Promise<Trajectory[]> {
  const sft = config.sft!;
  const { tokenizer } = target;
  const train = env.corpus.questions.train;
  const order = permutation(train.length, createRandom(config.seed, RANDOM_STREAMS.sftQuestions)).map(
    (i) => train[i]!,
  );
  // Small-print questions at their share of the demonstrations (the crop is demonstrated on enough
  // of them to be learned), the rest from the other questions, each in the seeded order. The
  // training split holds fewer small-print questions than the share asks for (433 of 2,000 at the
  // defaults, 160 of them cropped), so they are repeated: each repetition is its own rollout, with
  // its own draws of the oracle's mistakes.
  const small = order.filter((q) => q.metadata.small);
  const large = order.filter((q) => !q.metadata.small);
  const smallCount = small.length === 0 ? 0 : Math.round(count * sft.smallPrintShare);
  const questions = [
    ...Array.from({ length: smallCount }, (_, i) => small[i % small.length]!),
    ...large.slice(0, count - smallCount),
  ];
  // The oracle over the run's ports, making the run's mistakes unless `overrides` change them.
  const oracleEpisodes = async (list: PromptRecord[], overrides: OracleOptions = {}) => {
    const oracle = createScriptedPolicy({
      tokenizer,
      ...(target.chatFormat && { chatFormat: target.chatFormat }),
      script: createOracleScript(env.corpus, {
        vagueRate: sft.vagueRate,
        skipCropRate: sft.skipCropRate,
        skipResearchRate: sft.skipResearchRate,
        maxTurns: episode.maxTurns,
        cropBy: sft.cropBy,
        seed: config.seed,
        ...overrides,
      }),
    });
    const episodes = await runEpisodes(
      expandGroups(list, 1),
      { policy: oracle, searchEngine: ports.searchEngine, imageOps: ports.imageOps },
      { config: episode },
    );
    return episodes.map((e) => e.trajectory);
  };
  const demos = await oracleEpisodes(questions);
  const practiceCount = sft.cropPractice ?? Math.round(count / 2);
  if (practiceCount === 0 || small.length === 0) return demos;
  // Crop practice: every crop it can demonstrate (no skipped crop, a second search until the page
  // is found), with its own draws of the vague query.
  const practice = await oracleEpisodes(cropPracticeQuestions(env, practiceCount, small), {
    skipCropRate: 0,
    skipResearchRate: 0,
    seed: config.seed + CROP_PRACTICE_SEED_OFFSET,
  });
  const bbox = tokenizer.specialTokenId('<bbox>');
  return [
    ...demos,
    ...practice.flatMap((trajectory) => {
      const mask = cropTurnMask(trajectory.fullInputIds, trajectory.lossMask, bbox);
      return mask ? [{ ...trajectory, lossMask: mask }] : [];
    }),
  ];
}

/**
 * Crop practice's questions (`sft.cropPractice`): `count` small-print training questions whose
 * page has two or three regions, repeated in the seeded order, each its own rollout. Its episodes
 * are trained on the crop turn alone (cropTurnMask): choosing a region by the question and the
 * page needs many distinct crops (docs/method.md#why-the-crop-was-not-learned), while the queries
 * are learned from the demonstrations, whose mix this leaves as it is. Episodes that do not crop
 * are left out.
 */
function cropPracticeQuestions(
  env: SlideEnvironment,
  count: number,
  small: readonly PromptRecord[],
): PromptRecord[] {
  // Pages of two or three regions, where the question, read against the page's pointer lines,
  // decides which one: on a page of one, the crop is right whichever role was asked, which teaches
  // the crop but not the choice.
  const regions = new Map<string, number>();
  for (const deck of env.corpus.decks)
    for (const slide of deck.slides) regions.set(slide.basename, slide.facts.filter((f) => f.small).length);
  const choosing = small.filter((q) => (regions.get(q.goldenBasenames?.[0] ?? '') ?? 0) >= 2);
  const pool = choosing.length > 0 ? choosing : small;
  return Array.from({ length: count }, (_, i) => pool[i % pool.length]!);
}

/** Draws the crop practice's mistakes apart from the demonstrations' (the same question is in both). */
const CROP_PRACTICE_SEED_OFFSET = 7919;

/**
 * The loss mask of the policy turn that writes `<bbox>` (a run of 1s in `lossMask` holding the
 * token `bbox`), every other position 0; null when no such turn (or no `<bbox>` token).
 */
export function cropTurnMask(
  inputIds: readonly number[],
  lossMask: readonly number[],
  bbox: number | undefined,
): number[] | null {
  if (bbox === undefined) return null;
  for (let start = 0; start < lossMask.length; start++) {
    if (lossMask[start] !== 1) continue;
    let end = start;
    while (end < lossMask.length && lossMask[end] === 1) end++;
    if (inputIds.slice(start, end).includes(bbox))
      return lossMask.map((_, p) => (p >= start && p < end ? 1 : 0));
    start = end;
  }
  return null;
}
