import { loadWithOptionalPackages, type OptionalPackage } from '../../provider-utils/optional-package';
import type * as PointerSelectorModule from './pointer-selector';
import type { PointerSelector, PointerSelectorSettings } from './pointer-selector-settings';

/** The optional peer dependency of the pointer selector and the command that installs it. */
const TFJS: readonly OptionalPackage[] = [
  {
    name: '@tensorflow/tfjs',
    install:
      'npm install @tensorflow/tfjs@4.22.0 @tensorflow/tfjs-backend-wasm@4.22.0 (or @tensorflow/tfjs-node)',
  },
];

/**
 * The selector's tfjs implementation (pointer-selector.ts), or a MissingDependencyError saying what
 * to install when @tensorflow/tfjs is absent, not Node's raw ERR_MODULE_NOT_FOUND. `load` is for tests.
 */
export function loadPointerSelector(
  load: () => Promise<typeof PointerSelectorModule> = () => import('./pointer-selector'),
): Promise<typeof PointerSelectorModule> {
  return loadWithOptionalPackages('searcher-rl/icd', TFJS, load);
}

/**
 * The pointer-network selector (docs/method.md#pointer-selector). The one part of searcher-rl/icd
 * that needs @tensorflow/tfjs (an optional peer dependency): it is loaded at the first call, not
 * when the subpath is imported, so the rest of the subpath works without it.
 */
export async function createPointerSelector(settings: PointerSelectorSettings): Promise<PointerSelector> {
  return (await loadPointerSelector()).createPointerSelector(settings);
}
