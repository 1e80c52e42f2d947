import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/image needs sharp (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const sharpImageOps = await loadWithOptionalPackages(
  'searcher-rl/image',
  [{ name: 'sharp', install: 'npm install sharp@^0.34' }],
  () => import('./sharp-image-ops'),
);

/**
 * Crops with sharp: the box enlarged so that its longer side reaches `minOutputSide`, capped at
 * `maxOutputSide`.
 */
export const createSharpImageOps = sharpImageOps.createSharpImageOps;
export type { SharpImageOps, SharpImageOpsSettings } from './sharp-image-ops';
export { sharpImageOpsSettingsSchema } from './settings';
