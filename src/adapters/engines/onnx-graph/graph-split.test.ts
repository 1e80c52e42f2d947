import { describe, expect, it } from 'vitest';
import { cutGraph } from './graph-split';
import { ONNX_FLOAT, ONNX_INT64, type OnnxGraph } from './proto';
import { buildTrainingGraph } from './training-graph';
import { transformerWeightShapes } from './transformer-graph';

const CONFIG = {
  vocabSize: 11,
  contextLength: 8,
  layers: 2,
  width: 8,
  heads: 2,
  mlpWidth: 32,
  layerNormEpsilon: 1e-5,
};

describe("cutGraph on the training graph of the tfjs policy's transformer", () => {
  const graph = buildTrainingGraph(CONFIG);
  const weights = new Set(transformerWeightShapes(CONFIG).map((w) => w.name));
  const cutTraining = (keep: readonly string[]) =>
    cutGraph(graph, {
      forwardOutputs: ['token_log_probs', 'entropy_sum'],
      recomputable: new Set(['Slice', 'Concat', 'Reshape', 'Transpose', 'LayerNormalization', 'Mul', 'Exp']),
      staticInputs: weights,
      keep: new Set(keep),
      recompute: graph.recomputed,
    });

  it('fetches no attention weights: the backward computes them again from the kept queries and keys', () => {
    const cut = cutTraining(graph.saved);
    const softmaxOutputs = graph.nodes.filter((n) => n.opType === 'Softmax').flatMap((n) => n.outputs);
    expect(softmaxOutputs).toHaveLength(CONFIG.layers);
    expect(graph.recomputed).toEqual(softmaxOutputs);
    const fetched = new Set(cut.forward.outputs.map((o) => o.name));
    expect(softmaxOutputs.filter((w) => fetched.has(w))).toEqual([]);
    expect(cut.backward.nodes.filter((n) => n.opType === 'Softmax')).toHaveLength(CONFIG.layers);
    // The kept values are what the forward fetches besides the loss's outputs.
    expect([...fetched].filter((name) => !cut.saved.includes(name)).sort()).toEqual([
      'entropy_sum',
      'token_log_probs',
    ]);
  });

  it('keeps no activation the graph does not name (shapes aside): its own list is complete', () => {
    const cut = cutTraining(graph.saved);
    const floats = cut.forward.outputs.filter((o) => o.type === ONNX_FLOAT && cut.saved.includes(o.name));
    expect(floats.map((o) => o.name).filter((name) => !graph.saved.includes(name))).toEqual([]);
  });

  it('keeps a matrix product the graph forgot to name instead of computing it again', () => {
    // Not naming the MLP's pre-activation: the backward would run its matrix product again.
    const up = graph.saved[6]!;
    expect(graph.nodes.find((n) => n.outputs.includes(up))?.opType).toBe('Add');
    const cut = cutTraining(graph.saved.filter((v) => v !== up));
    expect(cut.saved).toContain(up);
    expect(cut.recomputed.filter((n) => n.opType === 'MatMul' || n.opType === 'Gemm')).toEqual(
      cutTraining(graph.saved).recomputed.filter((n) => n.opType === 'MatMul' || n.opType === 'Gemm'),
    );
  });
});

describe('cutGraph', () => {
  // forward: y = x W (MatMul), s = Sigmoid(y), loss inputs out = ReduceSum(s); backward (g given):
  // ds = g * s * (1 - s) needs s (recomputed from the kept y), dW = x^T ds, and a value whose
  // shape alone the backward reads (z, through Shape).
  const graph = {
    name: 'toy',
    nodes: [
      { opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] },
      { opType: 'Sigmoid', inputs: ['y'], outputs: ['s'] },
      { opType: 'MatMul', inputs: ['s', 'w'], outputs: ['z'] },
      { opType: 'ReduceSum', inputs: ['z'], outputs: ['out'] },
      { opType: 'Transpose', inputs: ['w'], outputs: ['wt'] },
      { opType: 'Sub', inputs: ['one', 's'], outputs: ['oneMinus'] },
      { opType: 'Mul', inputs: ['s', 'oneMinus'], outputs: ['slope'] },
      { opType: 'Mul', inputs: ['g', 'slope'], outputs: ['ds'] },
      { opType: 'MatMul', inputs: ['ds', 'wt'], outputs: ['dx'] },
      { opType: 'Shape', inputs: ['z'], outputs: ['zShape'] },
      { opType: 'Expand', inputs: ['dx', 'zShape'], outputs: ['grad'] },
    ],
    initializers: [{ name: 'one', type: ONNX_FLOAT, dims: [], values: [1] }],
    inputs: [
      { name: 'x', type: ONNX_FLOAT, dims: [2, 2] },
      { name: 'w', type: ONNX_FLOAT, dims: [2, 2] },
      { name: 'g', type: ONNX_FLOAT, dims: [2, 2] },
    ],
    outputs: [
      { name: 'out', type: ONNX_FLOAT, dims: null },
      { name: 'grad', type: ONNX_FLOAT, dims: null },
    ],
  } as OnnxGraph;
  const cut = cutGraph(graph, {
    forwardOutputs: ['out'],
    recomputable: new Set(['Sigmoid', 'Sub', 'Mul', 'Transpose']),
    staticInputs: new Set(['w']),
  });

  it('keeps the matrix product, recomputes the cheap ops, and hands over a shape instead of its value', () => {
    expect(cut.saved).toEqual(['y', 'zShape']);
    expect(cut.forward.outputs.map((o) => [o.name, o.type])).toEqual([
      ['out', ONNX_FLOAT],
      ['y', ONNX_FLOAT],
      ['zShape', ONNX_INT64],
    ]);
    expect(cut.recomputed.map((n) => n.outputs[0])).toEqual(['s']);
    // The transposed weight is computed from the static weight alone: computed in the backward.
    expect(cut.backward.nodes.map((n) => n.outputs[0])).toContain('wt');
    expect(cut.backward.inputs.map((i) => i.name).sort()).toEqual(['g', 'w', 'y', 'zShape']);
    expect(cut.forward.inputs.map((i) => i.name).sort()).toEqual(['w', 'x']);
  });

  it('runs the two graphs to what the one graph computes', async () => {
    const ort = await import('onnxruntime-node');
    const { encodeOnnxModel } = await import('./proto');
    const t = (values: number[]) => new ort.Tensor('float32', Float32Array.from(values), [2, 2]);
    const feeds = { x: t([1, 2, 3, 4]), w: t([0.5, -1, 0.25, 2]), g: t([1, -1, 0.5, 2]) };
    const whole = await ort.InferenceSession.create(encodeOnnxModel(graph, 17));
    const forward = await ort.InferenceSession.create(encodeOnnxModel(cut.forward, 17));
    const backward = await ort.InferenceSession.create(encodeOnnxModel(cut.backward, 17));
    const expected = await whole.run(feeds);
    const first = await forward.run({ x: feeds.x, w: feeds.w });
    const second = await backward.run({ w: feeds.w, g: feeds.g, y: first.y!, zShape: first.zShape! });
    expect(Array.from(first.out!.data as Float32Array)).toEqual(
      Array.from(expected.out!.data as Float32Array),
    );
    expect(Array.from(second.grad!.data as Float32Array)).toEqual(
      Array.from(expected.grad!.data as Float32Array),
    );
  });

  it('keeps a value the graph names even when its op is recomputable', () => {
    const kept = cutGraph(graph, {
      forwardOutputs: ['out'],
      recomputable: new Set(['Sigmoid', 'Sub', 'Mul', 'Transpose']),
      staticInputs: new Set(['w']),
      keep: new Set(['s']),
    });
    expect(kept.saved).toEqual(['s', 'zShape']);
    expect(kept.recomputed).toEqual([]);
  });

  it('names a forward output no node gives', () => {
    expect(() =>
      cutGraph(graph, { forwardOutputs: ['nope'], recomputable: new Set(), staticInputs: new Set() }),
    ).toThrow(/no node gives nope/);
  });
});
