import { loadWithOptionalPackages } from '../../provider-utils/optional-package';

// searcher-rl/search-http needs undici (optional peer dependencies): a missing one is a
// MissingDependencyError saying what to install, not Node's raw ERR_MODULE_NOT_FOUND.
const [searchModule] = await loadWithOptionalPackages(
  'searcher-rl/search-http',
  [{ name: 'undici', install: 'npm install undici@^7' }],
  () => Promise.all([import('./search')]),
);

/**
 * Search-R1's retrieval server (`POST /retrieve`): a hit's basename is the document id, its text
 * the document's contents.
 */
export const createSearchR1Retriever = searchModule.createSearchR1Retriever;
/**
 * A VRAG-style image search endpoint (`POST /search`, or `GET /search?queries=`): a hit's basename
 * is the image file's name.
 */
export const createVragImageSearch = searchModule.createVragImageSearch;
/**
 * Web search with the Brave Search API: a hit's basename is its URL, its text the title and
 * description.
 */
export const createBraveWebSearch = searchModule.createBraveWebSearch;
