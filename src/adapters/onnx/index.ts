import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';
import { ONNX_OPTIONAL_PACKAGES } from './packages';

// searcher-rl/onnx needs onnxruntime-node and @huggingface/tokenizers (optional peer dependencies):
// a missing one is a MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/onnx', ONNX_OPTIONAL_PACKAGES, () => import('./implementation'));

export const createOnnxPolicy = implementation.createOnnxPolicy;
export const createHfTokenizer = implementation.createHfTokenizer;
export const executionProviderProblem = implementation.executionProviderProblem;
export const ONNX_CHECKPOINT_FORMAT = implementation.ONNX_CHECKPOINT_FORMAT;
export { onnxPolicySettingsSchema, ONNX_EXECUTION_PROVIDERS } from './settings';
export { checkCausalLmLayout, readCausalLmConfig, LAYOUT_HINT } from './layout';
export { ONNX_OPTIONAL_PACKAGES } from './packages';
export type { OnnxPolicy } from './implementation';
export type { OnnxPolicySettings, OnnxExecutionProvider } from './settings';
export type { GraphValue, CausalLmLayout, CausalLmConfig } from './layout';
