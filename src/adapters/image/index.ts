export { createSharpImageOps, type SharpImageOps, type SharpImageOpsSettings } from './sharp-image-ops';
export { sharpImageOpsSettingsSchema } from './settings';
