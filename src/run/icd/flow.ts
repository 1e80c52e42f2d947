import { InvalidArgumentError } from '../../core/errors';
import { createRandom, RANDOM_STREAMS } from '../../core/random';
import { createPointerSelector } from '../../adapters/icd/pointer-selector';
import type { PointerSelector } from '../../adapters/icd/pointer-selector-settings';
import {
  evaluateSelections,
  greedyChoice,
  trainSelectorGrpo,
  warmUpOnLabels,
} from '../../adapters/icd/pointer-training';
import type { Store } from '../../ports/store';
import { latestCheckpointKey, readPolicyCheckpoint, writePolicyCheckpoint } from '../checkpoints';
import { buildIcdDemoData, DEFAULT_ICD_DATA_OPTIONS, type IcdDataOptions, type IcdDemoData } from './data';
import {
  beamSearchChoice,
  cosineChoice,
  datasetView,
  meanLabelAccuracy,
  randomChoice,
  selectionReward,
  splitIndices,
  warmUpLabels,
} from './selection';

/** The warm-up's labels: the data's beam trajectories, cosine top-k, or none (GRPO from a fresh selector). */
export type IcdWarmUp = 'beam' | 'cosine' | 'none';
/** The warm-ups `searcher-rl icd train --warm-up` accepts. */
export const ICD_WARM_UPS: readonly IcdWarmUp[] = ['beam', 'cosine', 'none'];

/**
 * The ICD flow on the embedded demo: its data, the warm-up and its epochs, GRPO steps, and where
 * checkpoints go.
 */
export interface IcdFlowOptions extends IcdDataOptions {
  warmUp: IcdWarmUp;
  warmUpEpochs: number;
  grpoSteps: number;
  batchSize: number;
  groupSize: number;
  learningRate: number;
  /** Checkpoints (after the warm-up and every `checkpointEvery` GRPO steps) and resume. */
  store?: Store;
  runId?: string;
  checkpointEvery: number;
}

/** The flow's defaults: the data's, a beam warm-up, then GRPO. */
export const DEFAULT_ICD_FLOW_OPTIONS: Omit<IcdFlowOptions, 'log'> = {
  ...DEFAULT_ICD_DATA_OPTIONS,
  warmUp: 'beam',
  warmUpEpochs: 4,
  grpoSteps: 150,
  batchSize: 16,
  groupSize: 8,
  learningRate: 0.01,
  checkpointEvery: 50,
};

/** Mean accuracy of a selection on the training queries and on the held-out queries. */
export interface IcdSplitAccuracy {
  train: number;
  heldOut: number;
}

/** The baselines, each query choosing from its own final pool (docs/method.md#icd-selection). */
export interface IcdBaselines {
  random: number;
  /** The `shots` candidates most similar to the query. */
  cosineTopK: number;
  /** The top sequence of the beam search: it reads the query's answers (a ceiling, not a selector). */
  beamSearch: number;
  /** Frozen-model calls the beam search made per query. */
  beamSearchCallsPerQuery: number;
}

/**
 * What the selector reached: the warm-up's label accuracy, its accuracy after the warm-up and after
 * GRPO.
 */
export interface IcdSelectorResult {
  /** Mean accuracy of the warm-up's labels on the training queries (null with `warmUp: 'none'`). */
  labelAccuracy: number | null;
  /** The selector's greedy choice after its warm-up (null with `warmUp: 'none'`, or when resumed and not recorded). */
  warmUp: IcdSplitAccuracy | null;
  grpo: IcdSplitAccuracy;
  grpoRewards: number[];
  resumedFromStep: number | null;
}

/**
 * The flow's data and figures: held-out and training accuracy of every selection, and the
 * selector's.
 */
export interface IcdFlowResult {
  data: IcdDemoData;
  /** Mean VQA accuracy on the held-out queries, each choosing from its own pool. */
  heldOut: { random: number; cosineTopK: number; beamSearch: number; warmUp: number | null; grpo: number };
  selector: IcdSelectorResult;
  grpoRewards: number[];
  resumedFromStep: number | null;
}

/** Random choice, cosine top-k and the beam search on the given queries (positions in `data.final`). */
export async function evaluateIcdBaselines(
  data: IcdDemoData,
  options: Pick<IcdFlowOptions, 'seed' | 'shots' | 'beamWidth'>,
  indices: readonly number[],
): Promise<IcdBaselines> {
  const { shots } = options;
  const view = datasetView(data, shots);
  const reward = selectionReward(data);
  const beam = beamSearchChoice(data, { beamWidth: options.beamWidth, shots });
  return {
    random: await evaluateSelections(view, indices, randomChoice(options.seed, shots), reward),
    cosineTopK: await evaluateSelections(view, indices, cosineChoice(data, shots), reward),
    beamSearch: await evaluateSelections(view, indices, beam, reward),
    beamSearchCallsPerQuery: indices.length ? beam.state.calls / indices.length : 0,
  };
}

/**
 * The whole ICD flow on the embedded demo (docs/method.md#icd-selection): data (normalise, mine,
 * inject, control), the baselines on the held-out queries, then the pointer selector
 * (`trainIcdSelector`: the warm-up `warmUp` names, then on-policy GRPO).
 */
export async function runIcdFlow(options: IcdFlowOptions): Promise<IcdFlowResult> {
  const data = await buildIcdDemoData(options);
  const baselines = await evaluateIcdBaselines(data, options, splitIndices(data).heldOut);
  options.log(
    `held-out mean accuracy: random ${baselines.random.toFixed(3)}, cosine top-${options.shots} ${baselines.cosineTopK.toFixed(3)}, beam search (width ${options.beamWidth}, reads the answers, ${baselines.beamSearchCallsPerQuery.toFixed(0)} calls per query) ${baselines.beamSearch.toFixed(3)}`,
  );
  const selector = await trainIcdSelector(data, options);
  return {
    data,
    heldOut: {
      random: baselines.random,
      cosineTopK: baselines.cosineTopK,
      beamSearch: baselines.beamSearch,
      warmUp: selector.warmUp?.heldOut ?? null,
      grpo: selector.grpo.heldOut,
    },
    selector,
    grpoRewards: selector.grpoRewards,
    resumedFromStep: selector.resumedFromStep,
  };
}

/**
 * The pointer selector on the demo's data: a cross-entropy warm-up on the labels `warmUp` names
 * (the data's beam trajectories, cosine top-k, or none), then on-policy GRPO on the training
 * queries; the greedy choice is evaluated on the training and held-out queries after each.
 * With a `store`, checkpoints after the warm-up and every `checkpointEvery` GRPO steps, and a
 * run resumes from its latest one (with the same warm-up).
 */
export async function trainIcdSelector(
  data: IcdDemoData,
  options: IcdFlowOptions,
): Promise<IcdSelectorResult> {
  const { shots } = options;
  const view = datasetView(data, shots);
  const reward = selectionReward(data);
  const { train, heldOut } = splitIndices(data);
  const labels = warmUpLabels(data, options.warmUp, shots);
  const labelAccuracy = labels ? await meanLabelAccuracy(view, train, labels, reward) : null;
  const evaluate = async (selector: PointerSelector): Promise<IcdSplitAccuracy> => ({
    train: await evaluateSelections(view, train, greedyChoice(selector), reward),
    heldOut: await evaluateSelections(view, heldOut, greedyChoice(selector), reward),
  });
  const selector = await createPointerSelector({
    inputDimensions: data.table.dimensions,
    shots,
    seed: options.seed,
    learningRate: options.learningRate,
  });
  const sampling = createRandom(options.seed, RANDOM_STREAMS.icdSelectorSampling);
  const runId = options.runId ?? 'icd-selector';
  let resumedFromStep: number | null = null;
  let warmUp: IcdSplitAccuracy | null = null;
  try {
    const latest = options.store ? await latestCheckpointKey(options.store, runId) : null;
    let startStep = 0;
    if (latest && options.store) {
      const { state, checkpoint } = await readPolicyCheckpoint(options.store, runId, latest);
      // Checkpoints written before the warm-up was a choice were all on the beam labels.
      const saved = (state.warmUp as IcdWarmUp | undefined) ?? 'beam';
      if (saved !== options.warmUp)
        throw new InvalidArgumentError({
          argument: 'warmUp',
          message: `run '${runId}' was started with warm-up '${saved}', not '${options.warmUp}': resume it with the same warm-up, or start another run (another --out)`,
        });
      selector.load(checkpoint);
      sampling.restore(state.random as [number, number, number, number]);
      startStep = Number(state.grpoStep);
      // Older checkpoints kept the held-out figure alone (a number): not enough to report both.
      const recorded = state.warmUpAccuracy;
      warmUp = typeof recorded === 'object' && recorded !== null ? (recorded as IcdSplitAccuracy) : null;
      resumedFromStep = startStep;
      options.log(`resumed from ${latest} (GRPO step ${startStep})`);
    } else {
      if (labels) {
        const losses = warmUpOnLabels(selector, view, {
          indices: train,
          epochs: options.warmUpEpochs,
          batchSize: options.batchSize,
          random: sampling,
          labels,
        });
        warmUp = await evaluate(selector);
        options.log(
          `warm-up (cross-entropy on ${labelName(options.warmUp, shots)}, whose mean accuracy on the training queries is ${labelAccuracy?.toFixed(3)}): loss ${losses.map((l) => l.toFixed(3)).join(' -> ')}; mean accuracy ${warmUp.train.toFixed(3)} training, ${warmUp.heldOut.toFixed(3)} held-out`,
        );
      } else options.log('no warm-up: GRPO starts from a fresh selector');
      await checkpoint(selector, options, runId, 0, {
        grpoStep: 0,
        warmUp: options.warmUp,
        warmUpAccuracy: warmUp,
        random: sampling.state(),
      });
    }
    const reports = await trainSelectorGrpo(selector, view, reward, {
      indices: train,
      steps: options.grpoSteps,
      batchSize: options.batchSize,
      groupSize: options.groupSize,
      random: sampling,
      startStep,
      onStep: async (report) => {
        if (report.step % 25 === 0)
          options.log(
            `grpo step ${report.step}: mean reward ${report.meanReward.toFixed(3)}, ${report.usableGroups} usable groups`,
          );
        if (report.step % options.checkpointEvery === 0 || report.step === options.grpoSteps)
          await checkpoint(selector, options, runId, report.step, {
            grpoStep: report.step,
            warmUp: options.warmUp,
            warmUpAccuracy: warmUp,
            random: sampling.state(),
          });
      },
    });
    const grpo = await evaluate(selector);
    options.log(
      `after GRPO (${options.warmUp === 'none' ? 'no warm-up' : `after the warm-up on ${labelName(options.warmUp, shots)}`}): mean accuracy ${grpo.train.toFixed(3)} training, ${grpo.heldOut.toFixed(3)} held-out`,
    );
    return { labelAccuracy, warmUp, grpo, grpoRewards: reports.map((r) => r.meanReward), resumedFromStep };
  } finally {
    selector.dispose();
  }
}

/** How the log and the table name a warm-up's labels. */
export function labelName(warmUp: IcdWarmUp, shots: number): string {
  return warmUp === 'cosine' ? `cosine top-${shots} labels` : warmUp === 'beam' ? 'beam labels' : 'no labels';
}

async function checkpoint(
  selector: PointerSelector,
  options: IcdFlowOptions,
  runId: string,
  step: number,
  state: Record<string, unknown>,
): Promise<void> {
  if (!options.store) return;
  await writePolicyCheckpoint(options.store, runId, step, selector.save(), state);
}
