// Everything of this subpath that needs its optional packages; index.ts loads it, or says what to install.
export { createTfjsPolicy, tokenizerFromCheckpoint, tfjsPolicySettingsSchema, CHECKPOINT_FORMAT, type TfjsPolicy, type TfjsPolicySettings, type CreateTfjsPolicyOptions } from './policy';
export { selectTfjsBackend, TFJS_BACKENDS, type TfjsBackendName, type SelectedBackend, type BackendModuleLoader } from './backends';
export { registerWasmMatmul } from './wasm-matmul';
export type { TransformerConfig } from './transformer';
export type { AdamWSettings } from './adamw';
