// The API reference (`npm run docs:api`, into .cache/api, not committed): one module per public
// import path, read from package.json's exports map, so a new subpath is documented without an
// edit here. Every warning is an error: an undocumented public name, a {@link} that resolves to
// nothing, a referenced type that is not in the reference.
import { readFileSync } from 'node:fs';

const { exports } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const entryPoints = Object.values(exports)
  .filter((target) => typeof target === 'object')
  .map((target) => target.types.replace('./dist/', './src/').replace(/\.d\.ts$/, '.ts'));

/** @type {Partial<import('typedoc').TypeDocOptions>} */
export default {
  name: 'searcher-rl',
  entryPoints,
  out: '.cache/api',
  tsconfig: './tsconfig.json',
  readme: 'README.md',
  // Types the public names refer to but no entry point exports (a port's option types, a zod
  // schema behind a settings type) are documented under their module's <internal> namespace.
  plugin: ['typedoc-plugin-missing-exports', './scripts/typedoc-subpaths.mjs'],
  placeInternalsInOwningModule: true,
  excludeExternals: true,
  excludePrivate: true,
  excludeInternal: true,
  // No git remote to link sources to.
  disableSources: true,
  validation: {
    notExported: true,
    invalidLink: true,
    invalidPath: true,
    rewrittenLink: true,
    notDocumented: true,
    unusedMergeModuleWith: true,
  },
  requiredToBeDocumented: [
    'Enum',
    'EnumMember',
    'Variable',
    'Function',
    'Class',
    'Interface',
    'TypeAlias',
    'Namespace',
  ],
  treatWarningsAsErrors: true,
};
