import type * as Ort from 'onnxruntime-node';
import { transformerWeightShapes, type TransformerGraphConfig } from '../onnx-graph/index';
import { LN_EPS, type Transformer } from './transformer';

// What the ONNX Runtime rollouts (onnx-rollouts.ts) and training (onnx-training.ts) share: the
// graphs' weights are the tfjs Transformer's parameters, by name and shape. Training feeds them as
// inputs from the live variables (liveWeightFeeds); rollouts make them constants of a session made
// again after each update.

/** The model's sizes and layer-norm epsilon, as the graph builders (../onnx-graph) take them. */
export function graphConfigOf(model: Transformer): TransformerGraphConfig {
  return { ...model.config, layerNormEpsilon: LN_EPS };
}

/** Throws when the graphs' weight inputs (../onnx-graph/transformer-graph.ts) are not the Transformer's parameters: an error in this package, not in the caller's use. */
export function checkGraphWeights(model: Transformer, what: string): void {
  const expected = transformerWeightShapes(model.config);
  const mismatch = model.parameters.findIndex(
    (p, i) => p.name !== expected[i]?.name || p.variable.shape.join() !== expected[i]!.shape.join(),
  );
  if (mismatch >= 0 || expected.length !== model.parameters.length) {
    throw new Error(
      `${what}: the ONNX graph's weights do not match the Transformer's parameters (first difference at ${model.parameters[mismatch]?.name ?? 'the count'})`,
    );
  }
}

/**
 * The weights as ONNX Runtime tensors by parameter name, copied from the tfjs variables only when
 * one has changed (tfjs's assign gives a variable a new data id): once after each update or load.
 */
export function liveWeightFeeds(ort: typeof Ort, model: Transformer): () => Record<string, Ort.Tensor> {
  let weightIds: unknown[] = [];
  let weightFeeds: Record<string, Ort.Tensor> = {};
  return () => {
    const ids = model.parameters.map((p) => p.variable.dataId);
    if (ids.length === weightIds.length && ids.every((id, i) => id === weightIds[i])) return weightFeeds;
    weightFeeds = Object.fromEntries(
      model.parameters.map((p) => [
        p.name,
        new ort.Tensor('float32', (p.variable.dataSync() as Float32Array).slice(), p.variable.shape),
      ]),
    );
    weightIds = ids;
    return weightFeeds;
  };
}
