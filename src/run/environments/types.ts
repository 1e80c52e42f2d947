import type { AdaptersConfigInput, SearcherConfig } from '../../config';
import type { Trajectory } from '../../core/trajectory/trajectory';
import type { DatasetSplit } from '../dataset';
import type { PromptRecord } from '../../core/types';
import type { SlideCorpusSettings } from '../../env/slides/corpus';
import type { ImageOps } from '../../ports/image-ops';
import type { ChatFormat } from '../../ports/policy-backend';
import type { SearchEngine } from '../../ports/search-engine';
import type { Tokenizer } from '../../ports/types';
import type { SearcherPorts } from '../../searcher';
import type { BaselinePolicy } from '../baseline-scripts';
import type { RunConfig } from '../config';
import type { RunOptions } from '../progress';

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

/**
 * What a server is asked to serve (`ServedEnvironmentSettings` of searcher-rl/server without its
 * Searcher settings): the slide environment's corpus and split, or a task file.
 */
export interface ServedEnvironmentChoice {
  /** The offline slide environment (default): its corpus settings and cache folder. */
  slides?: Partial<SlideCorpusSettings> & { cacheDir: string; split?: 'train' | 'validation' | 'test' };
  /** Your tasks (PromptRecord JSONL) over the configured ports. */
  tasksFile?: string;
  /** Which of the task file's rows: its split column's, as a run splits them (default train). */
  tasksSplit?: DatasetSplit;
}

/** What a server serves of an environment: the ports it brings (for those the configuration leaves unset) and the tasks. */
export interface ServedEnvironmentSource {
  adapters: AdaptersConfigInput;
  tasks: PromptRecord[];
}

/**
 * An environment, one entry of the registry (`ENVIRONMENTS`, src/run/environment.ts) that both a
 * run and the environment server choose from: which settings choose it, and how each opens it.
 */
export interface EnvironmentDefinition {
  readonly kind: RunEnvironment['kind'];
  /** Whether a run's configuration chooses it (the first entry that does is the run's). */
  choosesRun(config: RunConfig): boolean;
  /** Whether a server's settings choose it. */
  choosesServed(choice: ServedEnvironmentChoice): boolean;
  /** The environment of a run: its questions, ports, evaluation, warm start and baselines. */
  openRun(config: RunConfig, options: RunOptions): Promise<RunEnvironment>;
  /** What a server serves: the environment's ports and its tasks. */
  openServed(choice: ServedEnvironmentChoice): Promise<ServedEnvironmentSource>;
}
