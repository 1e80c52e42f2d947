import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/search-http needs undici (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [searchModule] = await loadWithOptionalPackages(
  'searcher-rl/search-http',
  [{ name: 'undici', install: 'npm install undici@^7' }],
  () => Promise.all([import('./search')]),
);

export const createSearchR1Retriever = searchModule.createSearchR1Retriever;
export const createVragImageSearch = searchModule.createVragImageSearch;
export const createBraveWebSearch = searchModule.createBraveWebSearch;
