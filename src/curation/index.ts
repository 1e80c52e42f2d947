// searcher-rl/curation: data-centric RL over run folders (docs/method.md#data-centric-rl): the
// unified log, difficulty buckets, ground-truth verification, focused rounds, rare-success
// distillation with think-only rewriting, the funnel; and the commands of `searcher-rl curate`.
export * from '../core/curation/index';
export {
  episodeEvents,
  type UnifiedEvent,
  type UnifiedEventType,
  type LifecycleEvent,
  type RunEventType,
} from '../core/events';
export {
  runCurationCommand,
  CURATION_COMMANDS,
  verifyRun,
  funnelReport,
  summariseVerdicts,
  type CurationCommand,
} from '../run/curate/commands';
export { distillRun, type CurationValues } from '../run/curate/distill';
export { closedLoop } from '../run/curate/loop';
export { roundRunConfig, writeRoundFiles, type RoundStart } from '../run/curate/round-files';
export { loadEpisodes, runSetting, type RunEpisodes, type RunSetting } from '../run/curate/data';
