import { extractiveGeneratorAdapter } from '../adapters/extractive/adapter';
import { geminiGeneratorAdapter, geminiJudgeAdapter } from '../adapters/gemini/adapter';
import { sharpImageOpsAdapter } from '../adapters/image/adapter';
import {
  memoryStoreAdapter,
  mockGeneratorAdapter,
  mockSearchEngineAdapter,
  rawImageOpsAdapter,
} from '../adapters/mock/adapter';
import { openaiGeneratorAdapter, openaiJudgeAdapter } from '../adapters/openai/adapter';
import { ruleJudgeAdapter } from '../adapters/rule-judge/adapter';
import { scriptedPolicyAdapter } from '../adapters/scripted-policy/adapter';
import { braveAdapter, searchR1Adapter, vragAdapter } from '../adapters/search-http/adapter';
import { sqliteFtsAdapter } from '../adapters/sqlite-fts/adapter';
import { jsonlStoreAdapter } from '../adapters/store/jsonl/adapter';
import { sqliteStoreAdapter } from '../adapters/store/sqlite/adapter';
import { slideReaderAdapter } from '../env/slides/reader-adapter';
import { createAdapterRegistry } from './adapter-registry';
import {
  llamaGeneratorAdapter,
  llamaPolicyAdapter,
  onnxPolicyAdapter,
  tfjsPolicyAdapter,
} from './policy-engines';

/**
 * Every adapter a configuration can name, one line each: the `adapters` section's schema
 * (src/config.ts), the composition root's builders (src/container.ts) and the packages a run
 * checks for (src/run/packages.ts) are derived from this list. Adding an adapter is its folder
 * (with an `adapter.ts` from `defineAdapter`) and its line here (docs/providers.md#add-an-adapter).
 */
export const BUILT_IN_ADAPTERS = [
  mockSearchEngineAdapter,
  sqliteFtsAdapter,
  searchR1Adapter,
  vragAdapter,
  braveAdapter,
  scriptedPolicyAdapter,
  tfjsPolicyAdapter,
  onnxPolicyAdapter,
  llamaPolicyAdapter,
  mockGeneratorAdapter,
  extractiveGeneratorAdapter,
  openaiGeneratorAdapter,
  geminiGeneratorAdapter,
  llamaGeneratorAdapter,
  slideReaderAdapter,
  ruleJudgeAdapter,
  openaiJudgeAdapter,
  geminiJudgeAdapter,
  rawImageOpsAdapter,
  sharpImageOpsAdapter,
  memoryStoreAdapter,
  jsonlStoreAdapter,
  sqliteStoreAdapter,
] as const;

/** A definition of the built-in list. */
export type BuiltInAdapter = (typeof BUILT_IN_ADAPTERS)[number];

/** The registry of the built-in adapters; `ADAPTER_REGISTRY.with(myAdapter)` adds one of yours. */
export const ADAPTER_REGISTRY = createAdapterRegistry(BUILT_IN_ADAPTERS, {
  searchEngine: 'mock',
  generator: 'mock',
  judge: 'rule',
  imageOps: 'raw-rgba',
  store: 'memory',
});
