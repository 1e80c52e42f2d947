import { InvalidArgumentError } from '../../core/errors';
import type { IcdDatasetItem, IcdDatasetView } from '../../core/icd/dataset-view';
import { selectorGrpoLoss } from '../../core/icd/selector-grpo';
import { permutation, type Random } from '../../core/random';
import type { PointerSelector, SelectorBatch } from './pointer-selector-settings';

/** The reward of a selection: the frozen model's accuracy with those demonstrations (`null`: scoring failed). */
export type SelectionReward = (item: IcdDatasetItem, pointer: readonly number[]) => Promise<number | null>;

/** B items as one selector batch, each repeated `repeat` times (a GRPO group). */
export function selectorBatch(items: readonly IcdDatasetItem[], repeat = 1): SelectorBatch {
  const first = items[0];
  if (!first)
    throw new InvalidArgumentError({ argument: 'items', message: 'a batch needs at least one query' });
  const d = first.queryEmbedding.length;
  const k = first.poolIndices.length;
  const size = items.length * repeat;
  const queries = new Float32Array(size * d);
  const candidates = new Float32Array(size * k * d);
  let row = 0;
  for (const item of items) {
    if (item.poolIndices.length !== k)
      throw new InvalidArgumentError({
        argument: 'items',
        message: `query ${item.queryId} has a pool of ${item.poolIndices.length}, the batch ${k}`,
      });
    for (let r = 0; r < repeat; r++, row++) {
      queries.set(item.queryEmbedding, row * d);
      candidates.set(item.candidateEmbeddings, row * k * d);
    }
  }
  return { queries, candidates, size, poolSize: k };
}

function batches(
  view: IcdDatasetView,
  indices: readonly number[],
  batchSize: number,
  random: Random,
): IcdDatasetItem[][] {
  const order = permutation(indices.length, random).map((i) => indices[i]!);
  const out: IcdDatasetItem[][] = [];
  for (let i = 0; i < order.length; i += batchSize)
    out.push(order.slice(i, i + batchSize).map((j) => view.item(j)));
  return out;
}

/** The labels of a query for the warm-up: choices in local indices of its pool, in prompt order. */
export type SelectionLabels = (item: IcdDatasetItem) => readonly (readonly number[])[];

/**
 * Cross-entropy warm-up on labels (teacher forcing, every label of every query): minimises
 * -sum_s log p(label_s | earlier labels). Labels shorter than the selector's shots are skipped,
 * longer ones cut to them. Returns the mean loss per epoch.
 */
export function warmUpOnLabels(
  selector: PointerSelector,
  view: IcdDatasetView,
  options: {
    indices: readonly number[];
    epochs: number;
    batchSize: number;
    random: Random;
    labels: SelectionLabels;
  },
): number[] {
  const shots = selector.settings.shots;
  const losses: number[] = [];
  for (let epoch = 0; epoch < options.epochs; epoch++) {
    let total = 0;
    let count = 0;
    for (const group of batches(view, options.indices, options.batchSize, options.random)) {
      const rows = group.flatMap((item) =>
        options
          .labels(item)
          .filter((l) => l.length >= shots)
          .map((label) => ({ item, label: label.slice(0, shots) })),
      );
      if (rows.length === 0) continue;
      const batch = selectorBatch(rows.map((r) => r.item));
      const actions = rows.map((r) => r.label);
      const logp = selector.logProbs(batch, actions);
      total -= logp.flat().reduce((a, b) => a + b, 0);
      count += rows.length;
      const weight = -1 / (rows.length * shots);
      selector.step(
        batch,
        actions,
        actions.map((a) => a.map(() => weight)),
      );
    }
    losses.push(count ? total / count : 0);
  }
  return losses;
}

/**
 * Cross-entropy warm-up on the beam labels: the data's `beam` trajectories (`item.beamLabels`),
 * which are a beam search's output when the data was made as Lever-LM makes it.
 */
export function warmUpOnBeamLabels(
  selector: PointerSelector,
  view: IcdDatasetView,
  options: { indices: readonly number[]; epochs: number; batchSize: number; random: Random },
): number[] {
  return warmUpOnLabels(selector, view, { ...options, labels: (item) => item.beamLabels });
}

/**
 * One GRPO step of the selector: its mean reward, the groups that carried a signal, and the loss.
 */
export interface GrpoStepReport {
  step: number;
  meanReward: number;
  usableGroups: number;
  loss: number;
}

/**
 * On-policy GRPO for the selector (docs/method.md#pointer-selector): per query of the batch,
 * `groupSize` selections sampled from the query's own pool, each rewarded by the frozen model
 * (vqa_acc_score), advantages by the group rule, one AdamW step on the PPO-clip loss of the
 * shots' log-probs. `onStep` sees every step (for checkpoints and logs).
 */
export async function trainSelectorGrpo(
  selector: PointerSelector,
  view: IcdDatasetView,
  reward: SelectionReward,
  options: {
    indices: readonly number[];
    steps: number;
    batchSize: number;
    groupSize: number;
    random: Random;
    startStep?: number;
    onStep?: (report: GrpoStepReport) => Promise<void> | void;
  },
): Promise<GrpoStepReport[]> {
  const reports: GrpoStepReport[] = [];
  let queue: IcdDatasetItem[][] = [];
  for (let step = options.startStep ?? 0; step < options.steps; step++) {
    if (queue.length === 0) queue = batches(view, options.indices, options.batchSize, options.random);
    const items = queue.shift()!;
    const batch = selectorBatch(items, options.groupSize);
    const { actions, logProbs } = selector.select(batch, options.random);
    const rewards = await Promise.all(
      actions.map((pointer, row) => reward(items[Math.floor(row / options.groupSize)]!, pointer)),
    );
    const groupIds = actions.map((_, row) => String(items[Math.floor(row / options.groupSize)]!.queryId));
    const grpo = selectorGrpoLoss({ shotLogProbs: logProbs, rewards, groupIds });
    if (grpo.usableGroups > 0) selector.step(batch, actions, grpo.gradShotLogProbs);
    const valid = rewards.filter((r): r is number => r !== null);
    const report = {
      step: step + 1,
      meanReward: valid.length ? valid.reduce((a, b) => a + b, 0) / valid.length : 0,
      usableGroups: grpo.usableGroups,
      loss: grpo.loss,
    };
    reports.push(report);
    await options.onStep?.(report);
  }
  return reports;
}

/** Mean reward of the selector's greedy choice (or `choose`'s) over the given queries. */
export async function evaluateSelections(
  view: IcdDatasetView,
  indices: readonly number[],
  choose: (items: IcdDatasetItem[]) => number[][] | Promise<number[][]>,
  reward: SelectionReward,
  batchSize = 64,
): Promise<number> {
  let total = 0;
  for (let i = 0; i < indices.length; i += batchSize) {
    const items = indices.slice(i, i + batchSize).map((j) => view.item(j));
    const pointers = await choose(items);
    const rewards = await Promise.all(items.map((item, k) => reward(item, pointers[k]!)));
    total += rewards.reduce<number>((a, r) => a + (r ?? 0), 0);
  }
  return indices.length ? total / indices.length : 0;
}

/** The selector's greedy choice for a list of items. */
export function greedyChoice(selector: PointerSelector): (items: IcdDatasetItem[]) => number[][] {
  return (items) => selector.select(selectorBatch(items)).actions;
}
