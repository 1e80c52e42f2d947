import type { OptionalPackage } from '../../provider-utils/optional-package';

/** The optional peer dependencies of searcher-rl/llama and the commands that install them. */
export const LLAMA_OPTIONAL_PACKAGES: readonly OptionalPackage[] = [
  { name: 'onnxruntime-node', install: 'npm install onnxruntime-node@^1.30.0' },
  { name: '@huggingface/tokenizers', install: 'npm install @huggingface/tokenizers@^0.2.0' },
  { name: '@huggingface/jinja', install: 'npm install @huggingface/jinja@^0.5.11' },
];
