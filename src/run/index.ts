// searcher-rl/run: the run as a library (the main job and everything around a run folder). The
// root export keeps its entry points (`trainRun`, `evalRun`, `parseRunConfig`, ...); this subpath
// adds the pieces a caller composes their own run from.
export { openRun, type RunSession, type RunPolicyStart } from './session';
// A run's current records after a resume or restart (an interrupted attempt's superseded ones dropped).
export { currentRecords, type SupersededCounts } from '../core/store/records';
export { describeEval } from './evaluate';
export { prepareEnvironment, type RunEnvironment } from './environment';
export {
  openRunFolder,
  readRunFolderConfig,
  writeJsonAtomic,
  RUN_FILES,
  EVAL_BEFORE,
  EVAL_AFTER,
} from './folder';
export {
  writePolicyCheckpoint,
  readPolicyCheckpoint,
  latestCheckpointKey,
  readLatestCheckpoint,
  SFT_RUN,
} from './checkpoints';
export { trainerSettingsSchema, type TrainerRunResult, type DataCursor } from './trainer';
export { TIMING_METRICS } from './step-metrics';
export { readPromptDataset, promptFromJsonRow } from './dataset';
export { writeReport } from './report/report';
export { runAblations, ablationTable, ABLATIONS, type Ablation, type AblationRow } from './ablate';
export { runDemo, type DemoOptions, type DemoResult } from './scripted-demo';
