import { beamSearchDemonstrations } from '../../core/icd/beam-search';
import { createIcdDatasetView, type IcdDatasetItem, type IcdDatasetView } from '../../core/icd/dataset-view';
import { embeddingRow } from '../../core/icd/embeddings';
import { createRandom, permutation, RANDOM_STREAMS } from '../../core/random';
import type { SelectionLabels, SelectionReward } from '../../adapters/icd/pointer-training';
import { bySimilarity, type IcdDemoData } from './data';

// The baselines and labels of the demo's comparison (docs/method.md#icd-selection): every query
// chooses from its own final pool; the selector's figures are its greedy choice.

/** The reward of a choice of local indices: the frozen model's accuracy with those demonstrations (`null`: scoring failed). */
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

export function datasetView(data: IcdDemoData, shots: number): IcdDatasetView {
  return createIcdDatasetView(data.final, {
    table: data.table,
    queryEmbedding: (id) => embeddingRow(data.queryTable, id),
    poolSize: data.final[0]?.candidate_pool_indices.length ?? 64,
    shots,
  });
}

/** Positions in `data.final` (and the view) of the training and held-out queries. */
export function splitIndices(data: IcdDemoData): { train: number[]; heldOut: number[] } {
  const indexOf = new Map(data.final.map((r, i) => [r.query_id, i]));
  return {
    train: data.trainIds.map((id) => indexOf.get(id)!),
    heldOut: data.heldOutIds.map((id) => indexOf.get(id)!),
  };
}

/** `shots` distinct candidates drawn uniformly from the pool (seeded). */
export function randomChoice(seed: number, shots: number) {
  const random = createRandom(seed, RANDOM_STREAMS.icdSelectorSampling, 1);
  return (items: IcdDatasetItem[]) =>
    items.map((item) => permutation(item.poolIndices.length, random).slice(0, shots));
}

/** Cosine top-k: the `shots` candidates most similar to the query, most similar first. */
export function cosineChoice(data: IcdDemoData, shots: number) {
  return (items: IcdDatasetItem[]) =>
    items.map((item) => bySimilarity(data.table, item.queryEmbedding, item.poolIndices).slice(0, shots));
}

/** Cosine top-k as the warm-up's labels (one per query). */
export function cosineLabels(data: IcdDemoData, shots: number): SelectionLabels {
  const choose = cosineChoice(data, shots);
  return (item) => choose([item]);
}

/**
 * The top sequence of a beam search over the query's pool scored by the frozen model
 * (`beamSearchDemonstrations`); it reads the query's answers through the scorer. `calls` counts
 * the frozen-model calls the searches made.
 */
export function beamSearchChoice(data: IcdDemoData, options: { beamWidth: number; shots: number }) {
  const state = { calls: 0 };
  const choose = async (items: IcdDatasetItem[]) => {
    const out: number[][] = [];
    for (const item of items) {
      const search = await beamSearchDemonstrations(data.demo.queries[item.queryId]!, item.poolIndices, {
        demonstration: (g) => data.demo.demonstrations[g]!,
        score: data.score,
        ...options,
      });
      state.calls += search.scoredCalls;
      out.push(search.beams[0]!.pointer);
    }
    return out;
  };
  return Object.assign(choose, { state });
}

/** The warm-up's labels: the data's beam trajectories, cosine top-k, or none. */
export function warmUpLabels(
  data: IcdDemoData,
  warmUp: 'beam' | 'cosine' | 'none',
  shots: number,
): SelectionLabels | null {
  if (warmUp === 'none') return null;
  return warmUp === 'cosine' ? cosineLabels(data, shots) : (item) => item.beamLabels;
}

/** Mean accuracy of the labels over the given queries (every label of every query). */
export async function meanLabelAccuracy(
  view: IcdDatasetView,
  indices: readonly number[],
  labels: SelectionLabels,
  reward: SelectionReward,
): Promise<number> {
  let total = 0;
  let count = 0;
  for (const i of indices) {
    const item = view.item(i);
    for (const label of labels(item)) {
      total += (await reward(item, label)) ?? 0;
      count++;
    }
  }
  return count ? total / count : 0;
}
