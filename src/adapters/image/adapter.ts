import { adaptersFromEntry } from '../../provider-utils/adapter-definition';
import { sharpImageOpsSettingsSchema } from './settings';

// The entry (and with it the SDK) is loaded by `create` only: naming these definitions loads no sharp.
const fromSharpEntry = adaptersFromEntry({ packages: ['sharp'], load: () => import('./index') });

/** `adapters.imageOps: {type: 'sharp', ...}`: crops with sharp, loaded by `create`. */
export const sharpImageOpsAdapter = fromSharpEntry({
  port: 'imageOps',
  type: 'sharp',
  settings: sharpImageOpsSettingsSchema,
  create: (entry, settings) => entry.createSharpImageOps(settings),
});
