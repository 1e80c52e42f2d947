import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import { LLAMA_OPTIONAL_PACKAGES } from './packages';

// searcher-rl/llama needs onnxruntime-node, @huggingface/tokenizers and @huggingface/jinja
// (optional peer dependencies): a missing one is a MissingDependencyError saying what to install.
const [policy, loader, generator] = await loadWithOptionalPackages(
  'searcher-rl/llama',
  LLAMA_OPTIONAL_PACKAGES,
  () => Promise.all([import('./policy'), import('./loader'), import('./generator')]),
);

/** A Llama-family policy (Llama, Mistral, Qwen2, Qwen3) from a Hugging Face folder or a GGUF file: rollouts with per-rollout key/value caches, scoring, and full or LoRA training in process on ONNX Runtime (see docs/pretrained-models.md). */
export const createLlamaPolicy = policy.createLlamaPolicy;
/** The chat protocol of a model's Jinja chat template: how the Searcher's prompt and each observation are wrapped as the model's own turns. */
export const chatFormatOf = policy.chatFormatOf;
/** The `format` of the Llama policy's checkpoints (a transformers folder for full fine-tuning, a peft adapter folder for LoRA). */
export const LLAMA_CHECKPOINT_FORMAT = policy.LLAMA_CHECKPOINT_FORMAT;
/** Loads a Llama-family model (Hugging Face folder or GGUF file) into float32 weights, its config, tokenizer and chat template, offline. */
export const loadLlamaModel = loader.loadLlamaModel;
/** Loads a peft LoRA adapter folder (`adapter_config.json`, `adapter_model.safetensors`) for a loaded model's config. */
export const loadPeftAdapter = loader.loadPeftAdapter;
/** A frozen Generator that is a local Llama-family model (e.g. SmolLM2-135M-Instruct): it answers from the evidence's text in its chat template, greedily, offline. */
export const createLlamaGenerator = generator.createLlamaGenerator;
export { llamaPolicySettingsSchema, llamaGeneratorSettingsSchema } from './settings';
export { parseLlamaConfig, llamaConfigJson, LLAMA_MODEL_TYPES } from '../engines/llama/config';
export { LORA_TARGET_MODULES } from '../engines/llama/llama-graph';
export { LLAMA_OPTIONAL_PACKAGES } from './packages';
export type { LlamaPolicy } from './policy';
export type { LlamaGenerator } from './generator';
export type { LlamaPolicySettings, LlamaGeneratorSettings } from './settings';
export type { LlamaConfig, LlamaModelType, RopeScaling } from '../engines/llama/config';
export type { LoadedLlama, LoadedAdapter } from './loader';
export type { LoraTargetModule } from '../engines/llama/llama-graph';
