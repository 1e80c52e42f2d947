export {
  createExtractiveGenerator,
  extractAnswer,
  isStopword,
  type ExtractiveGeneratorSettings,
} from './extractive-generator';
export { extractiveGeneratorSettingsSchema, EXTRACTIVE_FALLBACK_ANSWER } from './settings';
