import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import { ONNX_OPTIONAL_PACKAGES } from './packages';

// searcher-rl/onnx needs onnxruntime-node and @huggingface/tokenizers (optional peer dependencies):
// a missing one is a MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [policy, tokenizer, runtime] = await loadWithOptionalPackages(
  'searcher-rl/onnx',
  ONNX_OPTIONAL_PACKAGES,
  () => Promise.all([import('./policy'), import('./tokenizer'), import('./runtime')]),
);

export const createOnnxPolicy = policy.createOnnxPolicy;
export const ONNX_CHECKPOINT_FORMAT = policy.ONNX_CHECKPOINT_FORMAT;
export const createHfTokenizer = tokenizer.createHfTokenizer;
export const executionProviderProblem = runtime.executionProviderProblem;
export { onnxPolicySettingsSchema, ONNX_EXECUTION_PROVIDERS } from './settings';
export { checkCausalLmLayout, readCausalLmConfig, LAYOUT_HINT } from './layout';
export { ONNX_OPTIONAL_PACKAGES } from './packages';
export type { OnnxPolicy } from './policy';
export type { OnnxPolicySettings, OnnxExecutionProvider } from './settings';
export type { GraphValue, CausalLmLayout, CausalLmConfig } from './layout';
