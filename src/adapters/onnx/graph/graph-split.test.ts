import { describe, expect, it } from 'vitest';
import { splitTrainingGraph } from './graph-split';
import { buildTrainingGraph } from './training-graph';

const CONFIG = {
  vocabSize: 11,
  contextLength: 8,
  layers: 2,
  width: 8,
  heads: 2,
  mlpWidth: 32,
  layerNormEpsilon: 1e-5,
};

describe('splitTrainingGraph', () => {
  it('fetches no attention weights: the backward computes them again from the kept queries and keys', () => {
    const graph = buildTrainingGraph(CONFIG);
    const split = splitTrainingGraph(graph);
    const softmaxOutputs = graph.nodes.filter((n) => n.opType === 'Softmax').flatMap((n) => n.outputs);
    expect(softmaxOutputs).toHaveLength(CONFIG.layers);
    expect(graph.recomputed).toEqual(softmaxOutputs);
    const fetched = new Set(split.forward.outputs.map((o) => o.name));
    expect(softmaxOutputs.filter((w) => fetched.has(w))).toEqual([]);
    expect(split.backward.nodes.filter((n) => n.opType === 'Softmax')).toHaveLength(CONFIG.layers);
    // The kept activations are what the forward fetches besides the loss's outputs.
    expect([...fetched].filter((name) => !split.saved.includes(name)).sort()).toEqual([
      'entropy_sum',
      'token_log_probs',
    ]);
  });

  it('refuses a graph whose backward would recompute a matrix product it does not name', () => {
    const graph = buildTrainingGraph(CONFIG);
    // Not keeping the MLP's pre-activation leaves the backward to run its matrix product again.
    const up = graph.saved[6]!;
    expect(graph.nodes.find((n) => n.outputs.includes(up))?.opType).toBe('Add');
    expect(() => splitTrainingGraph({ ...graph, saved: graph.saved.filter((v) => v !== up) })).toThrow(
      /would recompute (Gemm|MatMul|Add) -> .*: keep its input/,
    );
  });
});
