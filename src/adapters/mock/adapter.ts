import { z } from 'zod';
import { defineAdapter } from '../../provider-utils/adapter-definition';
import { createMemoryStore } from './memory-store';
import { createMockGenerator } from './mock-generator';
import { createMockSearchEngine } from './mock-search-engine';
import { createRawImageOps } from './raw-image-ops';
import { mockGeneratorConfigSchema, mockSearchEngineConfigSchema } from './settings';

// The offline adapters, SDK-free: each is built at once, so a configuration of mocks resolves with
// `container.get` (no `getAsync`).

/** `adapters.searchEngine: {type: 'mock', pages, knowledgeBase}`: keyword search over pages given inline. */
export const mockSearchEngineAdapter = defineAdapter({
  port: 'searchEngine',
  type: 'mock',
  settings: mockSearchEngineConfigSchema,
  packages: [],
  create: (settings) => createMockSearchEngine(settings),
});

/** `adapters.generator: {type: 'mock', facts, answer, fallback}`: answers from the facts of the pages it is shown. */
export const mockGeneratorAdapter = defineAdapter({
  port: 'generator',
  type: 'mock',
  settings: mockGeneratorConfigSchema,
  packages: [],
  create: (settings) => createMockGenerator(settings),
});

/** `adapters.imageOps: {type: 'raw-rgba'}`: crops of raw RGBA images, no image library. */
export const rawImageOpsAdapter = defineAdapter({
  port: 'imageOps',
  type: 'raw-rgba',
  settings: z.object({}).strict(),
  packages: [],
  create: () => createRawImageOps(),
});

/** `adapters.store: {type: 'memory'}`: records kept in memory. */
export const memoryStoreAdapter = defineAdapter({
  port: 'store',
  type: 'memory',
  settings: z.object({}).strict(),
  packages: [],
  create: () => createMemoryStore(),
});
