export { createHashedEmbedder } from './hashed-embedder';
export { createGeneratorIcdScorer, icdPrompt, ICD_GENERATOR_INSTRUCTIONS } from './generator-scorer';
export { createIcdDemo, createOfflineIcdScorer, demonstrationText, type IcdDemo } from './demo';
export { readIcdParquet, writeIcdParquet } from './parquet';
// The pointer selector: createPointerSelector loads @tensorflow/tfjs (optional) at its first call, or says what to install.
export { createPointerSelector } from './load-pointer-selector';
export {
  pointerSelectorSettingsSchema,
  POINTER_SELECTOR_FORMAT,
  type PointerSelector,
  type PointerSelectorSettings,
  type SelectorBatch,
} from './pointer-selector-settings';
export {
  warmUpOnLabels,
  warmUpOnBeamLabels,
  trainSelectorGrpo,
  evaluateSelections,
  greedyChoice,
  selectorBatch,
  type SelectionReward,
  type SelectionLabels,
  type GrpoStepReport,
} from './pointer-training';
