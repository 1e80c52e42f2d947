import { rm } from 'node:fs/promises';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { stringify as toYaml } from 'yaml';
import type { FocusedRound } from '../../core/curation/rounds';
import type { PromptRecord } from '../../core/types';
import { parseRunConfig } from '../config';
import type { RunSetting } from './data';
import { jsonFile, textFile, writeCurationFiles } from './files';

/** A round's store run in a run folder (and its phase in a ready config): `focused-round1`, ... */
export const roundStoreRun = (round: Pick<FocusedRound, 'name'>) => round.name.replace('_', '-');

/** A round's line: its prompts, what built it, its budget. */
export function describeRound(round: FocusedRound, prompts: number, from: string): string {
  return `${round.name}: ${prompts} prompts from ${from} (${Object.entries(round.counts)
    .map(([k, v]) => `${k} ${v}`)
    .join(
      ', ',
    )}); budget B ${round.budget.batchSize} x n_agent ${round.budget.nAgent}, max_turns ${round.budget.maxTurns}, temperature ${round.budget.temperature}`;
}

/** Where the run of a round's ready config keeps the round's results: `RUN_DIR/STORE_RUN`, what `rounds --results` takes. */
export const roundResults = (setting: RunSetting, runDir: string, round: Pick<FocusedRound, 'name'>) =>
  join(
    resolve(setting.config.runsDir),
    `${basename(resolve(runDir))}-${roundStoreRun(round)}`,
    roundStoreRun(round),
  );

/** Where a round starts from: a checkpointed store run, `RUN_DIR/STORE_RUN` (`policy.initFrom`). */
export interface RoundStart {
  runDir: string;
  storeRun: string;
}

/** The prompts of a run by uid, in the round's order (uids the run does not have are left out). */
export const roundPrompts = (round: FocusedRound, prompts: ReadonlyMap<string, PromptRecord>) =>
  round.promptUids.flatMap((uid) => (prompts.has(uid) ? [prompts.get(uid)!] : []));

/** One epoch over the round's prompts (docs/method.md#focused-rounds: `total_epochs=1`) at its B, at least one step. */
export const oneEpochSteps = (prompts: number, batchSize: number) =>
  Math.max(1, Math.ceil(prompts / Math.max(1, Math.min(batchSize, prompts))));

const promptsJsonl = (prompts: readonly PromptRecord[]) =>
  prompts
    .map((p) =>
      JSON.stringify({ uid: p.uid, question: p.question, reference: p.reference, golden: p.goldenBasenames }),
    )
    .join('\n') + (prompts.length ? '\n' : '');

// A ready config may be run from any folder (and a config's paths may one day resolve from the
// config file): every path in it is absolute.
const PATH_KEY = /(Path|Dir)$/;
function absolutePaths(value: unknown, key = ''): unknown {
  if (typeof value === 'string') return PATH_KEY.test(key) && !isAbsolute(value) ? resolve(value) : value;
  if (Array.isArray(value)) return value.map((v) => absolutePaths(v));
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, absolutePaths(v, k)]));
  return value;
}

/**
 * The run config of a focused round as its own `train --config` run (docs/method.md#focused-rounds):
 * the round's questions as the dataset, the run's evaluation questions to evaluate on, the round's
 * budget (B as `trainer.batchSize`, n_agent, max_turns, temperature), judge-only weights
 * (`focused`), one phase named after the round, and the checkpoint it starts from as
 * `policy.initFrom`; every port as the run had it (the slide environment's made explicit).
 * Validated as `train` would before it is written.
 */
export function roundRunConfig(input: {
  setting: RunSetting;
  runDir: string;
  round: FocusedRound;
  prompts: number;
  steps: number;
  datasetPath: string;
  evaluationPath: string;
  start: RoundStart;
}): Record<string, unknown> {
  const { config, searcher } = input.setting;
  const { round } = input;
  const storeRun = roundStoreRun(round);
  const last = config.phases.at(-1);
  const own = config.searcher.adapters.policy === undefined;
  const { initFrom: _from, ...policy } = config.policy ?? {};
  const out = {
    runsDir: resolve(config.runsDir),
    runId: `${basename(resolve(input.runDir))}-${storeRun}`,
    seed: config.seed,
    dataset: { path: resolve(input.datasetPath), format: 'jsonl', evalPath: resolve(input.evaluationPath) },
    ...(own && { policy: { ...policy, initFrom: resolve(input.start.runDir, input.start.storeRun) } }),
    phases: [
      {
        name: storeRun,
        steps: input.steps,
        weights: 'focused',
        learningRate: last?.learningRate ?? 1e-3,
        warmupSteps: 0,
      },
    ],
    trainer: {
      ...config.trainer,
      batchSize: Math.max(1, Math.min(round.budget.batchSize, input.prompts)),
      saveFreq: Math.max(1, input.steps),
    },
    searcher: {
      ...config.searcher,
      episode: {
        ...config.searcher.episode,
        maxTurns: round.budget.maxTurns,
        temperature: round.budget.temperature,
      },
      rl: { ...config.searcher.rl, nAgent: round.budget.nAgent },
      adapters: absolutePaths({
        ...searcher.adapters,
        ...(config.searcher.adapters.policy && { policy: config.searcher.adapters.policy }),
      }),
    },
    evaluation: { limit: config.evaluation.limit, temperature: config.evaluation.temperature },
  };
  // What train would refuse is a defect here, found before the file is written.
  parseRunConfig(out, `${round.name}.config.yaml`);
  return out;
}

/**
 * A round's files under `runDir/curation/`, written as one step: `focused_roundN.parquet` (the
 * verl/Search-R1 layout) and `.jsonl` (its questions), `.json` (the round: uids, exclusions,
 * counts, budget), `evaluation.jsonl` (the run's evaluation questions) and, when the round has
 * prompts, `focused_roundN.config.yaml`: a run config with the round's budget that
 * `searcher-rl train --config` runs as it is. Returns the config's path (null for an empty round).
 */
export async function writeRoundFiles(input: {
  setting: RunSetting;
  runDir: string;
  round: FocusedRound;
  start: RoundStart;
  steps: number | null;
}): Promise<{ configPath: string | null; prompts: readonly PromptRecord[]; steps: number }> {
  const { setting, runDir, round } = input;
  const out = join(runDir, 'curation');
  const prompts = roundPrompts(round, setting.prompts);
  const steps = input.steps ?? oneEpochSteps(prompts.length, round.budget.batchSize);
  const datasetPath = join(out, `${round.name}.jsonl`);
  const evaluationPath = join(out, 'evaluation.jsonl');
  const configPath = join(out, `${round.name}.config.yaml`);
  const config =
    prompts.length === 0
      ? null
      : roundRunConfig({
          setting,
          runDir,
          round,
          prompts: prompts.length,
          steps,
          datasetPath,
          evaluationPath,
          start: input.start,
        });
  const { writeRlDataset } = await import('../../adapters/store/parquet/index');
  const header = [
    `# searcher-rl train --config ${resolve(configPath)}`,
    `# Focused ${round.name.replace('focused_', '').replace('round', 'round ')} of ${resolve(runDir)}: ${prompts.length} questions,`,
    `# B ${round.budget.batchSize} x n_agent ${round.budget.nAgent}, max_turns ${round.budget.maxTurns} (docs/method.md#settings-table), from ${input.start.runDir === runDir ? input.start.storeRun : join(input.start.runDir, input.start.storeRun)}.`,
    '# Written by searcher-rl curate; the run folder it writes is runsDir/runId.',
  ].join('\n');
  await writeCurationFiles(out, [
    { name: `${round.name}.parquet`, write: (path) => writeRlDataset(path, prompts, { split: 'train' }) },
    textFile(`${round.name}.jsonl`, promptsJsonl(prompts)),
    textFile('evaluation.jsonl', promptsJsonl(setting.evaluation)),
    jsonFile(`${round.name}.json`, { ...round, steps, config: config ? configPath : null }),
    ...(config ? [textFile(`${round.name}.config.yaml`, `${header}\n${toYaml(config)}`)] : []),
  ]);
  if (!config) await rm(configPath, { force: true });
  return { configPath: config ? configPath : null, prompts, steps };
}
