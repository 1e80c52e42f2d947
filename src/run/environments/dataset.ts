import type { PromptRecord } from '../../core/types';
import { InvalidArgumentError } from '../../core/errors';
import type { RunConfig } from '../config';
import { datasetBaselines } from '../baseline-scripts';
import { type DatasetSplit, readPromptDataset, splitRows } from '../dataset';
import type { RunOptions } from '../progress';
import { harvestSampled } from './harvest';
import type { EnvironmentDefinition, RunEnvironment } from './types';

/**
 * Your own questions (`dataset` of a run, `tasksFile` of the server) over the ports of
 * `searcher.adapters`: the environment brings no ports of its own.
 */
export const datasetEnvironmentDefinition: EnvironmentDefinition = {
  kind: 'dataset',
  choosesRun: (config) => config.dataset !== undefined && config.dataset !== null,
  choosesServed: (choice) => Boolean(choice.tasksFile),
  openRun: datasetEnvironment,
  // The trainer's dataset reader: UTF-8 or refused naming the line, every row an object, checked.
  // The rows of the split asked for (default train), as a run splits them: a server that trains
  // on a file with a split column never serves its held-out rows unless asked to.
  openServed: async (choice) => {
    const rows = await readPromptDataset(choice.tasksFile!);
    const split = choice.tasksSplit ?? 'train';
    const bySplit = splitRows(rows);
    if (bySplit[split].length === 0)
      throw new InvalidArgumentError({
        argument: '--split',
        message: `${choice.tasksFile} has no ${split} rows (train ${bySplit.train.length}, validation ${bySplit.validation.length}, test ${bySplit.test.length})`,
      });
    return { adapters: {}, tasks: bySplit[split] };
  },
};

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
  const byRows = splitRows(rows);
  const train = byRows.train;
  const held = byRows.validation.length + byRows.test.length;
  const splits: Record<DatasetSplit, { label: string; prompts: readonly PromptRecord[] } | null> = {
    train: { label: `${dataset.path} (train)`, prompts: train },
    validation: evalFile
      ? { label: dataset.evalPath!, prompts: evalFile }
      : byRows.validation.length > 0
        ? { label: `${dataset.path} (validation)`, prompts: byRows.validation }
        : null,
    test: byRows.test.length > 0 ? { label: `${dataset.path} (test)`, prompts: byRows.test } : null,
  };
  // Without a split asked for: the evaluation file, else the held-out rows (test first), else the training questions.
  const evaluated = evalFile
    ? { label: dataset.evalPath!, prompts: evalFile }
    : (splits.test ?? splits.validation ?? { label: dataset.path, prompts: train });
  // The evaluation the run makes: the split its config asks for (evaluation.split), else the default.
  const asked = config.evaluation.split;
  const shown = (asked !== undefined ? splits[asked] : null) ?? evaluated;
  options.onLog?.(
    `dataset: ${train.length} training questions (${dataset.path}${held > 0 ? `; ${held} held out by its split column` : ''}), evaluation ${shown.prompts.length} (${shown.label})`,
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
            `demonstrations: ${result.trajectories.length} episodes kept from ${result.solved} of ${result.questions} training questions (the demonstrator: up to ${result.attempts} searches a question, with its own words or its golden page's name, ${result.episodes} episodes; kept where ${result.criterion})`,
          );
          return result.trajectories;
        }
      : null,
    baselines: datasetBaselines(config.searcher.episode.mode),
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
