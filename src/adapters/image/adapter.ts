import { defineAdapter } from '../../provider-utils/adapter-definition';
import { sharpImageOpsSettingsSchema } from './settings';

/** `adapters.imageOps: {type: 'sharp', ...}`: crops with sharp, loaded by `create`. */
export const sharpImageOpsAdapter = defineAdapter({
  port: 'imageOps',
  type: 'sharp',
  settings: sharpImageOpsSettingsSchema,
  packages: ['sharp'],
  create: (settings) => import('./index').then((m) => m.createSharpImageOps(settings)),
});
