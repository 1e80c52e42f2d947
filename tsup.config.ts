import { defineConfig } from 'tsup';

// One entry per public subpath: importing the package root loads no adapter and no vendor SDK.
export default defineConfig({
  entry: {
    'index': 'src/index.ts',
    'adapters/mock/index': 'src/adapters/mock/index.ts',
    'adapters/rule-judge/index': 'src/adapters/rule-judge/index.ts',
    'adapters/scripted-policy/index': 'src/adapters/scripted-policy/index.ts',
    'adapters/store/jsonl/index': 'src/adapters/store/jsonl/index.ts',
    'adapters/store/sqlite/index': 'src/adapters/store/sqlite/index.ts',
    'adapters/store/parquet/index': 'src/adapters/store/parquet/index.ts',
    'container': 'src/container.ts',
    'adapters/openai/index': 'src/adapters/openai/index.ts',
    'adapters/gemini/index': 'src/adapters/gemini/index.ts',
    'adapters/search-http/index': 'src/adapters/search-http/index.ts',
    'adapters/openai-compatible/index': 'src/adapters/openai-compatible/index.ts',
    'adapters/tfjs/index': 'src/adapters/tfjs/index.ts',
    'adapters/onnx/index': 'src/adapters/onnx/index.ts',
    'adapters/image/index': 'src/adapters/image/index.ts',
    'adapters/sqlite-fts/index': 'src/adapters/sqlite-fts/index.ts',
    'adapters/icd/index': 'src/adapters/icd/index.ts',
    'provider-utils/index': 'src/provider-utils/index.ts',
    'testing/index': 'src/testing/index.ts',
    'cli/main': 'src/cli/main.ts',
  },
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  dts: true,
  sourcemap: true,
  clean: true,
  splitting: true,
  treeshake: true,
  // Vendor SDKs are optional peer dependencies, loaded only by their adapter's subpath.
  external: ['openai', '@google/genai', 'undici', 'zod', 'inversify', 'sharp', 'libsql', 'onnxruntime-node', '@huggingface/tokenizers', /^@tensorflow\//],
});
