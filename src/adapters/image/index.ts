export { createSharpImageOps, sharpImageOpsSettingsSchema, type SharpImageOps, type SharpImageOpsSettings } from './sharp-image-ops';
