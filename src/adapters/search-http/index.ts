import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as Implementation from './implementation';

// searcher-rl/search-http needs undici (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const implementation: typeof Implementation = await loadWithOptionalPackages('searcher-rl/search-http', [{ name: "undici", install: "npm install undici@^7" }], () => import('./implementation'));

export const createSearchR1Retriever = implementation.createSearchR1Retriever;
export const createVragImageSearch = implementation.createVragImageSearch;
export const createBraveWebSearch = implementation.createBraveWebSearch;
