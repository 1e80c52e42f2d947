import { defineAdapter } from '../../provider-utils/adapter-definition';
import { extractiveGeneratorSettingsSchema } from './settings';

/** `adapters.generator: {type: 'extractive', ...}`: the answer span of the evidence text that best matches the question, offline. */
export const extractiveGeneratorAdapter = defineAdapter({
  port: 'generator',
  type: 'extractive',
  settings: extractiveGeneratorSettingsSchema,
  packages: [],
  create: (settings) => import('./index').then((m) => m.createExtractiveGenerator(settings)),
});
