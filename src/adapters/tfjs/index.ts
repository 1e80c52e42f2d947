import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/tfjs needs @tensorflow/tfjs (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/tfjs', [{ name: "@tensorflow/tfjs", install: "npm install @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0 (or @tensorflow/tfjs-node)" }], () => import('./implementation'));

export const createTfjsPolicy = implementation.createTfjsPolicy;
export const tokenizerFromCheckpoint = implementation.tokenizerFromCheckpoint;
export const selectTfjsBackend = implementation.selectTfjsBackend;
export const registerWasmMatmul = implementation.registerWasmMatmul;
export const createPointerSelector = implementation.createPointerSelector;
export const pointerSelectorSettingsSchema = implementation.pointerSelectorSettingsSchema;
export const POINTER_SELECTOR_FORMAT = implementation.POINTER_SELECTOR_FORMAT;
export const warmUpOnBeamLabels = implementation.warmUpOnBeamLabels;
export const trainSelectorGrpo = implementation.trainSelectorGrpo;
export const evaluateSelections = implementation.evaluateSelections;
export const greedyChoice = implementation.greedyChoice;
export const selectorBatch = implementation.selectorBatch;
export { tfjsPolicySettingsSchema, CHECKPOINT_FORMAT, TFJS_BACKENDS } from './settings';
export type { TfjsPolicy, TfjsPolicySettings, CreateTfjsPolicyOptions, TfjsBackendName, SelectedBackend, BackendModuleLoader, TransformerConfig, AdamWSettings, PointerSelector, PointerSelectorSettings, SelectorBatch, SelectionReward, GrpoStepReport } from './implementation';
