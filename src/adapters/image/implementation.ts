// Everything of this subpath that needs its optional packages; index.ts loads it, or says what to install.
export { createSharpImageOps, type SharpImageOps, type SharpImageOpsSettings } from './sharp-image-ops';
export { sharpImageOpsSettingsSchema } from './settings';
