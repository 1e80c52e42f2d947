// searcher-rl/tensorboard: a run's figures as TensorBoard event files (no TensorFlow, no native package).
export { createTensorBoardTracker } from './tracker';
export { tensorBoardTrackerSettingsSchema, type TensorBoardTrackerSettings } from './settings';
export { crc32c, maskedCrc32c, tfRecord } from './crc32c';
