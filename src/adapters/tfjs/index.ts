import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/tfjs needs @tensorflow/tfjs (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/tfjs', [{ name: "@tensorflow/tfjs", install: "npm install @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0 (or @tensorflow/tfjs-node)" }], () => import('./implementation'));

export const createTfjsPolicy = implementation.createTfjsPolicy;
export const tokenizerFromCheckpoint = implementation.tokenizerFromCheckpoint;
export const selectTfjsBackend = implementation.selectTfjsBackend;
export const registerWasmMatmul = implementation.registerWasmMatmul;
export { tfjsPolicySettingsSchema, CHECKPOINT_FORMAT, TFJS_BACKENDS } from './settings';
export type { TfjsPolicy, TfjsPolicySettings, CreateTfjsPolicyOptions, TfjsBackendName, SelectedBackend, BackendModuleLoader, TransformerConfig, AdamWSettings } from './implementation';
