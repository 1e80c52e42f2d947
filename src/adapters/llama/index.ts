import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import { LLAMA_OPTIONAL_PACKAGES } from './packages';

// searcher-rl/llama needs onnxruntime-node, @huggingface/tokenizers and @huggingface/jinja
// (optional peer dependencies): a missing one is a MissingDependencyError saying what to install.
const [policy, loader] = await loadWithOptionalPackages('searcher-rl/llama', LLAMA_OPTIONAL_PACKAGES, () =>
  Promise.all([import('./policy'), import('./loader')]),
);

export const createLlamaPolicy = policy.createLlamaPolicy;
export const chatFormatOf = policy.chatFormatOf;
export const LLAMA_CHECKPOINT_FORMAT = policy.LLAMA_CHECKPOINT_FORMAT;
export const loadLlamaModel = loader.loadLlamaModel;
export const loadPeftAdapter = loader.loadPeftAdapter;
export { llamaPolicySettingsSchema } from './settings';
export { parseLlamaConfig, llamaConfigJson, LLAMA_MODEL_TYPES } from './config';
export { LORA_TARGET_MODULES } from './llama-graph';
export { LLAMA_OPTIONAL_PACKAGES } from './packages';
export type { LlamaPolicy } from './policy';
export type { LlamaPolicySettings } from './settings';
export type { LlamaConfig, LlamaModelType, RopeScaling } from './config';
export type { LoadedLlama, LoadedAdapter } from './loader';
export type { LoraTargetModule } from './llama-graph';
