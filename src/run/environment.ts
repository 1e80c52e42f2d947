import { createScriptedPolicy } from '../adapters/scripted-policy/index';
import type { AdaptersConfigInput, SearcherConfig } from '../config';
import { runEpisodes } from '../core/episode/run-episodes';
import type { Tokenizer } from '../ports/types';
import { createRandom, permutation, RANDOM_STREAMS } from '../core/random';
import { expandGroups } from '../core/rl/groups';
import type { Trajectory } from '../core/trajectory/trajectory';
import type { PromptRecord } from '../core/types';
import { slideEnvironmentAdapters } from '../env/slides/adapters-config';
import { buildSlideEnvironment, type SlideEnvironment } from '../env/slides/build';
import { corpusVocabulary } from '../env/slides/slide-text';
import { createOracleScript } from '../env/slides/oracle';
import type { ImageOps } from '../ports/image-ops';
import type { SearchEngine } from '../ports/search-engine';
import type { RunConfig } from './config';
import { readPromptDataset } from './dataset';
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
  /** The warm start's demonstrations: the slide oracle's episodes on `count` training questions (slide runs only). */
  demonstrations:
    | ((
        count: number,
        tokenizer: Tokenizer,
        ports: { searchEngine: SearchEngine; imageOps: ImageOps },
        episode: SearcherConfig['episode'],
      ) => Promise<Trajectory[]>)
    | null;
  /** Where the pages are, for the summary and the report's episode browser. */
  corpus: { cacheDir?: string; slidesDir: string | null };
  /** The SQLite FTS page index, where curation looks golden pages up (null when the engine is not one). */
  dbPath: string | null;
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
    demonstrations: (count, tokenizer, ports, episode) =>
      slideDemonstrations(config, env, count, tokenizer, ports, episode),
    corpus: { cacheDir, slidesDir: env.slidesDir },
    dbPath: env.dbPath,
  };
}

/**
 * The oracle's episodes on `count` training questions, a seeded sample of the split, not its first
 * rows (the split is sorted by id, deck by deck, and its first 2000 questions would leave the
 * policy never having seen half of the names).
 */
async function slideDemonstrations(
  config: RunConfig,
  env: SlideEnvironment,
  count: number,
  tokenizer: Tokenizer,
  ports: { searchEngine: SearchEngine; imageOps: ImageOps },
  episode: SearcherConfig['episode'],
): Promise<Trajectory[]> {
  const sft = config.sft!;
  const train = env.corpus.questions.train;
  const questions = permutation(train.length, createRandom(config.seed, RANDOM_STREAMS.sftQuestions))
    .slice(0, count)
    .map((i) => train[i]!);
  const oracle = createScriptedPolicy({
    tokenizer,
    script: createOracleScript(env.corpus, {
      vagueRate: sft.vagueRate,
      skipCropRate: sft.skipCropRate,
      skipResearchRate: sft.skipResearchRate,
      seed: config.seed,
    }),
  });
  const demos = await runEpisodes(
    expandGroups(questions, 1),
    { policy: oracle, searchEngine: ports.searchEngine, imageOps: ports.imageOps },
    { config: episode },
  );
  return demos.map((d) => d.trajectory);
}

async function datasetEnvironment(config: RunConfig, options: RunOptions): Promise<RunEnvironment> {
  const dataset = config.dataset!;
  const needsReference =
    config.searcher.reward.scheme === 'search-r1' ||
    config.phases.some(
      (p) =>
        p.steps > 0 && p.weights !== 'phase1' && (typeof p.weights === 'string' || p.weights.judge !== 0),
    );
  const train = await readPromptDataset(dataset.path, dataset.format, { needsReference });
  const evaluated =
    dataset.evalPath === null
      ? train
      : await readPromptDataset(dataset.evalPath, dataset.format, { needsReference });
  options.onLog?.(`dataset: ${train.length} questions (${dataset.path}), evaluation ${evaluated.length}`);
  const engine = config.searcher.adapters.searchEngine;
  const pagesDir = engine?.type === 'sqlite-fts' ? (engine.pagesDir ?? null) : null;
  const trainUids = new Set(train.map((p) => p.uid));
  return {
    kind: 'dataset',
    train,
    all: dataset.evalPath === null ? train : [...train, ...evaluated.filter((p) => !trainUids.has(p.uid))],
    vocabulary: () => datasetVocabulary([...train, ...evaluated]),
    adapters: {},
    evaluation: () => ({
      label: dataset.evalPath ?? dataset.path,
      prompts: evaluated,
      storeRun: 'eval-dataset',
    }),
    demonstrations: null,
    corpus: { slidesDir: pagesDir },
    dbPath: engine?.type === 'sqlite-fts' ? engine.dbPath : null,
  };
}

/** The words of the questions and references: the vocabulary tokenizer's tokens. */
function datasetVocabulary(prompts: readonly PromptRecord[]): string[] {
  const words = new Set<string>();
  for (const p of prompts)
    for (const text of [p.question, p.reference ?? '', ...(p.goldenBasenames ?? [])])
      for (const w of text.match(/[\p{L}\p{N}]+/gu) ?? []) words.add(w);
  return [...words];
}
