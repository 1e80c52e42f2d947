export {
  createExtractiveGenerator,
  extractAnswer,
  type ExtractiveGeneratorSettings,
} from './extractive-generator';
export { extractiveGeneratorSettingsSchema, EXTRACTIVE_FALLBACK_ANSWER } from './settings';
