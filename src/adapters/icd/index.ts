export { createHashedEmbedder } from './hashed-embedder';
export { createGeneratorIcdScorer, icdPrompt, ICD_GENERATOR_INSTRUCTIONS } from './generator-scorer';
export { createIcdDemo, createOfflineIcdScorer, demonstrationText, type IcdDemo } from './demo';
export { readIcdParquet, writeIcdParquet } from './parquet';
