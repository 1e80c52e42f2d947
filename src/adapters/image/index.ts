import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/image needs sharp (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/image', [{ name: "sharp", install: "npm install sharp@^0.34" }], () => import('./implementation'));

export const createSharpImageOps = implementation.createSharpImageOps;
export { sharpImageOpsSettingsSchema } from './settings';
export type { SharpImageOps, SharpImageOpsSettings } from './implementation';
