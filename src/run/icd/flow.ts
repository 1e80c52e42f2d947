import { createIcdDatasetView, type IcdDatasetItem, type IcdDatasetView } from '../../core/icd/dataset-view';
import { embeddingRow } from '../../core/icd/embeddings';
import { createRandom, permutation, RANDOM_STREAMS } from '../../core/random';
import { createPointerSelector } from '../../adapters/icd/pointer-selector';
import type { PointerSelector } from '../../adapters/icd/pointer-selector-settings';
import {
  evaluateSelections,
  greedyChoice,
  trainSelectorGrpo,
  warmUpOnBeamLabels,
  type SelectionReward,
} from '../../adapters/icd/pointer-training';
import type { Store } from '../../ports/store';
import { latestCheckpointKey, readPolicyCheckpoint, writePolicyCheckpoint } from '../checkpoints';
import {
  buildIcdDemoData,
  bySimilarity,
  DEFAULT_ICD_DATA_OPTIONS,
  type IcdDataOptions,
  type IcdDemoData,
} from './data';

export interface IcdFlowOptions extends IcdDataOptions {
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

export const DEFAULT_ICD_FLOW_OPTIONS: Omit<IcdFlowOptions, 'log'> = {
  ...DEFAULT_ICD_DATA_OPTIONS,
  warmUpEpochs: 4,
  grpoSteps: 150,
  batchSize: 16,
  groupSize: 8,
  learningRate: 0.01,
  checkpointEvery: 50,
};

export interface IcdFlowResult {
  data: IcdDemoData;
  /** Mean VQA accuracy on the held-out queries, each choosing from its own pool. */
  heldOut: { random: number; beam: number; warmUp: number; grpo: number };
  grpoRewards: number[];
  resumedFromStep: number | null;
}

/** The reward of a choice of local indices: the frozen model's accuracy with those demonstrations. */
export function selectionReward(data: IcdDemoData): SelectionReward {
  return async (item, pointer) => {
    const query = data.demo.queries[item.queryId]!;
    try {
      return (
        await data.score(
          query,
          pointer.map((p) => data.demo.demonstrations[item.poolIndices[p]!]!),
        )
      ).accuracy;
    } catch {
      return null;
    }
  };
}

export function datasetView(data: IcdDemoData): IcdDatasetView {
  return createIcdDatasetView(data.final, {
    table: data.table,
    queryEmbedding: (id) => embeddingRow(data.queryTable, id),
    poolSize: data.final[0]?.candidate_pool_indices.length ?? 64,
  });
}

/**
 * The whole ICD flow on the embedded demo (docs/method.md#icd-selection): data (normalise, mine,
 * inject, control), then the pointer selector: a cross-entropy warm-up on the beam labels and
 * on-policy GRPO on the training queries, evaluated on held-out queries against random choice
 * and the beam labels (greedy by similarity), every query choosing from its own pool.
 */
export async function runIcdFlow(options: IcdFlowOptions): Promise<IcdFlowResult> {
  const data = await buildIcdDemoData(options);
  const view = datasetView(data);
  const reward = selectionReward(data);
  const shots = 2;
  const indexOf = new Map(data.final.map((r, i) => [r.query_id, i]));
  const train = data.trainIds.map((id) => indexOf.get(id)!);
  const heldOut = data.heldOutIds.map((id) => indexOf.get(id)!);
  const evalRandom = createRandom(options.seed, RANDOM_STREAMS.icdSelectorSampling, 1);
  const randomChoice = (items: IcdDatasetItem[]) =>
    items.map((item) => permutation(item.poolIndices.length, evalRandom).slice(0, shots));
  const beamChoice = (items: IcdDatasetItem[]) =>
    items.map((item) => bySimilarity(data.table, item.queryEmbedding, item.poolIndices).slice(0, shots));
  const random = await evaluateSelections(view, heldOut, randomChoice, reward);
  const beam = await evaluateSelections(view, heldOut, beamChoice, reward);
  options.log(`held-out mean accuracy: random ${random.toFixed(3)}, beam labels ${beam.toFixed(3)}`);

  const selector = await createPointerSelector({
    inputDimensions: data.table.dimensions,
    shots,
    seed: options.seed,
    learningRate: options.learningRate,
  });
  const sampling = createRandom(options.seed, RANDOM_STREAMS.icdSelectorSampling);
  const runId = options.runId ?? 'icd-selector';
  let resumedFromStep: number | null = null;
  let warmUp = 0;
  try {
    const latest = options.store ? await latestCheckpointKey(options.store, runId) : null;
    let startStep = 0;
    if (latest && options.store) {
      const { state, checkpoint } = await readPolicyCheckpoint(options.store, runId, latest);
      selector.load(checkpoint);
      sampling.restore(state.random as [number, number, number, number]);
      startStep = Number(state.grpoStep);
      warmUp = Number(state.warmUpAccuracy);
      resumedFromStep = startStep;
      options.log(`resumed from ${latest} (GRPO step ${startStep})`);
    } else {
      const losses = warmUpOnBeamLabels(selector, view, {
        indices: train,
        epochs: options.warmUpEpochs,
        batchSize: options.batchSize,
        random: sampling,
      });
      warmUp = await evaluateSelections(view, heldOut, greedyChoice(selector), reward);
      options.log(
        `warm-up (cross-entropy on beam labels): loss ${losses.map((l) => l.toFixed(3)).join(' -> ')}; held-out mean accuracy ${warmUp.toFixed(3)}`,
      );
      await checkpoint(selector, options, runId, 0, {
        grpoStep: 0,
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
            warmUpAccuracy: warmUp,
            random: sampling.state(),
          });
      },
    });
    const grpo = await evaluateSelections(view, heldOut, greedyChoice(selector), reward);
    options.log(`after GRPO: held-out mean accuracy ${grpo.toFixed(3)}`);
    return {
      data,
      heldOut: { random, beam, warmUp, grpo },
      grpoRewards: reports.map((r) => r.meanReward),
      resumedFromStep,
    };
  } finally {
    selector.dispose();
  }
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
