import type { OptionalPackage } from '../../provider-utils/optional-package';

/** The optional peer dependencies of searcher-rl/onnx and the commands that install them. */
export const ONNX_OPTIONAL_PACKAGES: readonly OptionalPackage[] = [
  {
    name: 'onnxruntime-node',
    install:
      'npm install onnxruntime-node@^1.30.0 (CPU; for CUDA see docs/pretrained-models.md: --onnxruntime-node-install=cuda12)',
  },
  { name: '@huggingface/tokenizers', install: 'npm install @huggingface/tokenizers@^0.2.0' },
];
