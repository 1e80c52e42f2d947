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
  ICD_WARM_UPS,
  type IcdFlowOptions,
  type IcdFlowResult,
  type IcdWarmUp,
} from '../run/icd/flow';
export {
  runIcdTable,
  formatIcdTable,
  icdTableJsonLines,
  DEFAULT_ICD_TABLE_OPTIONS,
  type IcdTableOptions,
  type IcdTableResult,
} from '../run/icd/table';
