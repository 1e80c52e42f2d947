// searcher-rl/icd: in-context demonstration selection (docs/method.md#icd-selection): candidate
// pools, positive mining, pool injection, commit-on-improve, the pointer selector trained with
// GRPO; its adapters (hashed embedder, Generator scorer, Parquet) and the embedded demo's flow.
export * from '../core/icd/index';
export * from '../adapters/icd/index';
export {
  buildIcdDemoData,
  DEFAULT_ICD_DATA_OPTIONS,
  type IcdDataOptions,
  type IcdDemoData,
} from '../run/icd/data';
export {
  runIcdFlow,
  DEFAULT_ICD_FLOW_OPTIONS,
  type IcdFlowOptions,
  type IcdFlowResult,
} from '../run/icd/flow';
