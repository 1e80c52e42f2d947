export {
  createMockSearchEngine,
  type MockSearchEngine,
  type MockSearchEngineSettings,
  type MockPage,
} from './mock-search-engine';
export { createMockGenerator, type MockGenerator, type MockGeneratorSettings } from './mock-generator';
export { createRawImageOps, createRawImage, RAW_RGBA_MIME, type RawImageOps } from './raw-image-ops';
export { createMemoryStore, type MemoryStore } from './memory-store';
