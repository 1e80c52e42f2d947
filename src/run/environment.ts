import { createScriptedPolicy } from '../adapters/scripted-policy/index';
import type { AdaptersConfigInput, SearcherConfig } from '../config';
import { InvalidArgumentError } from '../core/errors';
import type { SearcherPorts } from '../searcher';
import { runEpisodes } from '../core/episode/run-episodes';
import type { ChatFormat } from '../ports/policy-backend';
import type { Tokenizer } from '../ports/types';
import { createRandom, permutation, RANDOM_STREAMS } from '../core/random';
import { expandGroups } from '../core/rl/groups';
import type { Trajectory } from '../core/trajectory/trajectory';
import type { PromptRecord } from '../core/types';
import { slideEnvironmentAdapters } from '../env/slides/adapters-config';
import { buildSlideEnvironment, type SlideEnvironment } from '../env/slides/build';
import { keywordRole } from '../env/slides/regions';
import { corpusVocabulary } from '../env/slides/slide-text';
import { createOracleScript, type OracleOptions } from '../env/slides/oracle';
import type { ImageOps } from '../ports/image-ops';
import type { SearchEngine } from '../ports/search-engine';
import type { RunConfig } from './config';
import { type DatasetSplit, readPromptDataset, splitOf } from './dataset';
import { type BaselinePolicy, genericBaselines, naiveRagScript } from './baseline-scripts';
import { DEMONSTRATION_ATTEMPTS, harvestDemonstrations } from './demonstrator';
import { progressOf, type RunOptions } from './progress';

/**
 * What a run trains and evaluates on, the same shape for both kinds of run: the offline slide
 * environment, or your own questions with the pages of `searcher.adapters.searchEngine`.
 */
export interface RunEnvironment {
  kind: 'slides' | 'dataset';
  /** The questions the RL phases draw from. */
  train: readonly PromptRecord[];
  /** Every question of the run (training and evaluation), for readers of the run folder. */
  all: readonly PromptRecord[];
  /** The words of the questions, references and pages: the vocabulary tokenizer's tokens. */
  vocabulary(): string[];
  /** The environment's ports, used for those `searcher.adapters` leaves unset. */
  adapters: AdaptersConfigInput;
  /** The questions evaluated (`split`: slide runs), what the summary calls them, and the store run of a standalone evaluation. */
  evaluation(split: RunConfig['evaluation']['split']): {
    label: string;
    prompts: readonly PromptRecord[];
    storeRun: string;
  };
  /**
   * The warm start's demonstrations on (at most) `count` training questions: the slide oracle's
   * episodes, or on your own data the demonstrator's successful episodes (`harvestDemonstrations`).
   */
  demonstrations:
    | ((
        count: number,
        target: DemonstrationTarget,
        ports: Omit<SearcherPorts, 'policy'> & { searchEngine: SearchEngine; imageOps: ImageOps },
        episode: SearcherConfig['episode'],
        options?: RunOptions,
      ) => Promise<Trajectory[]>)
    | null;
  /**
   * The scripted baselines measured beside the trained policy on the evaluation split
   * (src/run/baselines.ts): naive RAG and the crop rules; on a slide run the oracle as a reference line.
   */
  baselines: readonly BaselinePolicy[];
  /** Where the pages are, for the summary and the report's episode browser. */
  corpus: { cacheDir?: string; slidesDir: string | null };
  /** The SQLite FTS page index, where curation looks golden pages up (null when the engine is not one). */
  dbPath: string | null;
}

/** The policy demonstrations are made for: its tokenizer, and its chat format when it has one (a chat model's template wraps the episodes). */
export interface DemonstrationTarget {
  readonly tokenizer: Tokenizer;
  readonly chatFormat?: ChatFormat | undefined;
}

/** Builds (or reuses) a run's environment: the slide corpus, or reads the dataset. */
export async function prepareEnvironment(
  config: RunConfig,
  options: RunOptions = {},
): Promise<RunEnvironment> {
  return config.dataset ? datasetEnvironment(config, options) : slideEnvironment(config, options);
}

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
        description: "naive RAG, then a crop of the region whose role the question's attribute word names",
        script: naiveRagScript((question, marks) => {
          const role = keywordRole(question);
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
 * The generic demonstrator's episodes on `count` training questions, a seeded sample of them (not
 * the first rows): the warm start of a slide run by rejection sampling and of a run on your own data.
 */
function harvestSampled(
  config: RunConfig,
  train: readonly PromptRecord[],
  count: number,
  how: {
    ports: Omit<SearcherPorts, 'policy'>;
    target: DemonstrationTarget;
    episode: SearcherConfig['episode'];
    keepPerQuestion: number;
    firstSuccess?: boolean;
    options: RunOptions;
  },
) {
  const questions = permutation(train.length, createRandom(config.seed, RANDOM_STREAMS.sftQuestions))
    .slice(0, count)
    .map((i) => train[i]!);
  const { adapters: _adapters, ...sections } = config.searcher;
  return harvestDemonstrations({
    prompts: questions,
    ports: how.ports,
    tokenizer: how.target.tokenizer,
    chatFormat: how.target.chatFormat,
    searcher: { ...sections, episode: how.episode },
    keepPerQuestion: how.keepPerQuestion,
    ...(how.firstSuccess && { firstSuccess: true }),
    options: how.options,
  });
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
  const result = await harvestSampled(config, env.corpus.questions.train, count, {
    ports,
    target,
    episode,
    keepPerQuestion: 1,
    firstSuccess: true,
    options,
  });
  const bbox = tokenizer.specialTokenId('<bbox>');
  const crops = result.trajectories.flatMap((trajectory) => {
    const mask = cropTurnMask(trajectory.fullInputIds, trajectory.lossMask, bbox);
    return mask ? [{ ...trajectory, lossMask: mask }] : [];
  });
  const practiceCount = crops.length === 0 ? 0 : (sft.cropPractice ?? Math.round(count / 2));
  const practice = Array.from({ length: practiceCount }, (_, i) => crops[i % crops.length]!);
  options.onLog?.(
    `demonstrations: ${result.trajectories.length} episodes kept from ${result.solved} of ${result.questions} training questions (rejection sampling: up to ${DEMONSTRATION_ATTEMPTS} attempts a question until one succeeds, ${result.episodes} episodes; kept where ${result.criterion}), ${crops.length} of them crop; crop practice ${practiceCount}`,
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
 * are trained on the crop turn alone (cropTurnMask): choosing a region by the question needs many
 * distinct crops (docs/method.md#why-the-crop-was-not-learned), while the queries are learned from
 * the demonstrations, whose mix this leaves as it is. Episodes that do not crop are left out.
 */
function cropPracticeQuestions(
  env: SlideEnvironment,
  count: number,
  small: readonly PromptRecord[],
): PromptRecord[] {
  // Pages of two or three regions, where the question decides which one: on a page of one, the
  // crop is right whichever role was asked, which teaches the crop but not the choice.
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

async function datasetEnvironment(config: RunConfig, options: RunOptions): Promise<RunEnvironment> {
  const dataset = config.dataset!;
  const needsReference =
    config.searcher.reward.scheme === 'search-r1' ||
    config.phases.some(
      (p) =>
        p.steps > 0 && p.weights !== 'phase1' && (typeof p.weights === 'string' || p.weights.judge !== 0),
    );
  const rows = await readPromptDataset(dataset.path, dataset.format, { needsReference });
  const evalFile =
    dataset.evalPath === null
      ? null
      : await readPromptDataset(dataset.evalPath, dataset.format, { needsReference });
  // Rows marked validation or test are held out, unless every row is (a file of one split is the user's training set).
  const heldOut = rows.filter((p) => splitOf(p) === 'validation' || splitOf(p) === 'test');
  const train = heldOut.length < rows.length ? rows.filter((p) => !heldOut.includes(p)) : rows;
  const held = heldOut.length < rows.length ? heldOut : [];
  const bySplit = (split: DatasetSplit) => held.filter((p) => splitOf(p) === split);
  const splits: Record<DatasetSplit, { label: string; prompts: readonly PromptRecord[] } | null> = {
    train: { label: `${dataset.path} (train)`, prompts: train },
    validation: evalFile
      ? { label: dataset.evalPath!, prompts: evalFile }
      : bySplit('validation').length > 0
        ? { label: `${dataset.path} (validation)`, prompts: bySplit('validation') }
        : null,
    test: bySplit('test').length > 0 ? { label: `${dataset.path} (test)`, prompts: bySplit('test') } : null,
  };
  // Without a split asked for: the evaluation file, else the held-out rows (test first), else the training questions.
  const evaluated = evalFile
    ? { label: dataset.evalPath!, prompts: evalFile }
    : (splits.test ?? splits.validation ?? { label: dataset.path, prompts: train });
  options.onLog?.(
    `dataset: ${train.length} training questions (${dataset.path}${held.length > 0 ? `; ${held.length} held out by its split column` : ''}), evaluation ${evaluated.prompts.length} (${evaluated.label})`,
  );
  const engine = config.searcher.adapters.searchEngine;
  const pagesDir = engine?.type === 'sqlite-fts' ? (engine.pagesDir ?? null) : null;
  const all: PromptRecord[] = [];
  const seen = new Set<string>();
  for (const p of [...rows, ...(evalFile ?? [])])
    if (!seen.has(p.uid)) {
      seen.add(p.uid);
      all.push(p);
    }
  const instructions = config.searcher.episode.instructions ?? '';
  return {
    kind: 'dataset',
    train,
    all,
    vocabulary: () => datasetVocabulary(all, instructions),
    adapters: {},
    evaluation: (split) => {
      if (split === undefined) return { ...evaluated, storeRun: 'eval-dataset' };
      const chosen = splits[split];
      if (!chosen)
        throw new InvalidArgumentError({
          argument: 'evaluation.split',
          message: `'${dataset.path}' has no ${split} questions (eval --split ${split}): give its rows a split column ('split' in JSONL, extra_info.split in Parquet)${split === 'validation' ? ' or set dataset.evalPath' : ''}`,
        });
      return { ...chosen, storeRun: `eval-${split}` };
    },
    demonstrations: config.sft
      ? async (count, target, ports, episode, runOptions = options) => {
          const result = await harvestSampled(config, train, count, {
            ports,
            target,
            episode,
            keepPerQuestion: config.sft!.keepPerQuestion,
            options: runOptions,
          });
          runOptions.onLog?.(
            `demonstrations: ${result.trajectories.length} episodes kept from ${result.solved} of ${result.questions} training questions (the demonstrator: ${DEMONSTRATION_ATTEMPTS} searches a question with its own words, ${result.episodes} episodes; kept where ${result.criterion})`,
          );
          return result.trajectories;
        }
      : null,
    // Not yet measured on your own data (issue 39, item 6).
    baselines: [],
    corpus: { slidesDir: pagesDir },
    dbPath: engine?.type === 'sqlite-fts' ? engine.dbPath : null,
  };
}

/** The words of the questions, references and instructions: the vocabulary tokenizer's tokens. */
function datasetVocabulary(prompts: readonly PromptRecord[], instructions: string): string[] {
  const words = new Set<string>();
  for (const w of instructions.match(/[\p{L}\p{N}]+/gu) ?? []) words.add(w);
  for (const p of prompts)
    for (const text of [p.question, p.reference ?? '', ...(p.goldenBasenames ?? [])])
      for (const w of text.match(/[\p{L}\p{N}]+/gu) ?? []) words.add(w);
  return [...words];
}
