import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/tfjs needs @tensorflow/tfjs (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [policy, checkpoint, backends, wasmMatmul] = await loadWithOptionalPackages(
  'searcher-rl/tfjs',
  [
    {
      name: '@tensorflow/tfjs',
      install:
        'npm install @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0 (or @tensorflow/tfjs-node)',
    },
  ],
  () =>
    Promise.all([import('./policy'), import('./checkpoint'), import('./backends'), import('./wasm-matmul')]),
);

/**
 * A trainable causal transformer Searcher on TensorFlow.js (a GPT-2), with rollouts and gradients
 * optionally through ONNX Runtime.
 */
export const createTfjsPolicy = policy.createTfjsPolicy;
/** The tokenizer a checkpoint was trained with; create the policy with it before `load`. */
export const tokenizerFromCheckpoint = checkpoint.tokenizerFromCheckpoint;
/**
 * Makes a TensorFlow.js backend the active one (`auto`: the first of tensorflow-gpu, tensorflow,
 * wasm, cpu that initialises).
 */
export const selectTfjsBackend = backends.selectTfjsBackend;
/**
 * Registers the faster BatchMatMul kernel for tfjs's wasm backend: an explicit step, never done at
 * import.
 */
export const registerWasmMatmul = wasmMatmul.registerWasmMatmul;
export { tfjsPolicySettingsSchema, CHECKPOINT_FORMAT, TFJS_BACKENDS } from './settings';
export type { TfjsPolicy, CreateTfjsPolicyOptions } from './policy';
export type { TfjsPolicySettings } from './settings';
export type { TfjsBackendName, SelectedBackend, BackendModuleLoader } from './backends';
export type { TransformerConfig } from '../engines/transformer/transformer';
export type { AdamWSettings } from './adamw';
