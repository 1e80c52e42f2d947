import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import { ONNX_OPTIONAL_PACKAGES } from './packages';

// searcher-rl/onnx needs onnxruntime-node and @huggingface/tokenizers (optional peer dependencies):
// a missing one is a MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [policy, tokenizer, runtime] = await loadWithOptionalPackages(
  'searcher-rl/onnx',
  ONNX_OPTIONAL_PACKAGES,
  () => Promise.all([import('./policy'), import('../../provider-utils/hf-tokenizer'), import('./runtime')]),
);

/**
 * A rollouts-only Searcher policy on a pretrained causal LM in Hugging Face Optimum's ONNX layout,
 * run by ONNX Runtime (CPU or CUDA).
 */
export const createOnnxPolicy = policy.createOnnxPolicy;
/**
 * The `format` of the ONNX policy's checkpoint: a reference to its export (it loads no weights).
 */
export const ONNX_CHECKPOINT_FORMAT = policy.ONNX_CHECKPOINT_FORMAT;
/** The Tokenizer port over a Hugging Face `tokenizer.json`; `encode` adds no special tokens. */
export const createHfTokenizer = tokenizer.createHfTokenizer;
/**
 * Why an execution provider cannot be used by this onnxruntime-node, or `undefined` when it can.
 */
export const executionProviderProblem = runtime.executionProviderProblem;
export { onnxPolicySettingsSchema, ONNX_EXECUTION_PROVIDERS } from './settings';
export { checkCausalLmLayout, readCausalLmConfig, LAYOUT_HINT } from './layout';
export { ONNX_OPTIONAL_PACKAGES } from './packages';
export type { OnnxPolicy } from './policy';
export type { OnnxPolicySettings, OnnxExecutionProvider } from './settings';
export type { GraphValue, CausalLmLayout, CausalLmConfig } from './layout';
