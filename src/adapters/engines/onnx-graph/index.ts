// The ONNX graph toolchain: a ModelProto encoder, the graph builders of the tfjs policy's
// transformer (forward with a key/value cache; forward + backward for training) and the one function
// that makes ONNX Runtime sessions, and the forward/backward cut (cutGraph) of training graphs. No
// onnxruntime-node import at load time (it is passed in), no tfjs: searcher-rl/onnx uses the
// sessions, the engines of the tfjs transformer and of the Llama family the rest.
export {
  encodeOnnxModel,
  floatValueInfo,
  int64ValueInfo,
  withConstantInputs,
  ONNX_FLOAT,
  ONNX_INT64,
  type OnnxAttribute,
  type OnnxElementType,
  type OnnxGraph,
  type OnnxNode,
  type OnnxTensor,
  type OnnxValueInfo,
} from './proto';
export { GraphBuilder } from './graph-builder';
export {
  buildTransformerGraph,
  KV_CACHE_NAMES,
  ONNX_NAMES,
  ONNX_OPSET,
  transformerWeightShapes,
  type TransformerGraphConfig,
  type TransformerGraphShape,
} from './transformer-graph';
export {
  cutGraph,
  type CutGraphs,
  type CutOptions,
} from './graph-split';
export { buildTrainingGraph, TRAINING_NAMES, type TrainingGraph } from './training-graph';
export {
  createOnnxSession,
  onnxRuntimeEntry,
  onnxSessionOptions,
  CUDA_INSTALL,
  providerProblem,
  type OnnxRuntime,
  type OnnxSessionOptions,
} from './session';
export {
  createWorkerLane,
  type LaneResult,
  type LaneRun,
  type WorkerLane,
} from './worker-lane';
