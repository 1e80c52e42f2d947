// The API reference (`npm run docs:api`, into .cache/api, not committed): one module per public
// import path, read from package.json's exports map, so a new subpath is documented without an
// edit here. Every warning is an error: an undocumented public name, a {@link} that resolves to
// nothing, a referenced type that is not in the reference.
import { readFileSync } from 'node:fs';

const { exports } = JSON.parse(readFileSync(new URL('./package.json', import.meta.url), 'utf8'));
const entryPoints = Object.values(exports)
  .filter((target) => typeof target === 'object')
  .map((target) => target.types.replace('./dist/', './src/').replace(/\.d\.ts$/, '.ts'));

// Public names of searcher-rl/llama without TSDoc yet: src/adapters/llama/ was being changed in
// parallel when the reference was introduced. Document them there and empty this list (TypeDoc
// warns about an entry that is no longer needed).
const llamaUndocumented = [
  'createLlamaPolicy',
  'chatFormatOf',
  'LLAMA_CHECKPOINT_FORMAT',
  'loadLlamaModel',
  'loadPeftAdapter',
  'llamaPolicySettingsSchema',
  'LLAMA_MODEL_TYPES',
  'LORA_TARGET_MODULES',
  'LlamaPolicySettings',
  'LlamaConfig',
  'LlamaModelType',
  'LoadedLlama',
  'LoadedAdapter',
  'LoraTargetModule',
];

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
  intentionallyNotDocumented: llamaUndocumented.map((name) => `searcher-rl/llama.${name}`),
  treatWarningsAsErrors: true,
};
