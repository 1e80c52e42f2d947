// Everything of this subpath that needs its optional packages; index.ts loads it, or says what to install.
export { createOnnxPolicy, ONNX_CHECKPOINT_FORMAT, type OnnxPolicy } from './policy';
export { createHfTokenizer } from './tokenizer';
export { executionProviderProblem } from './runtime';
