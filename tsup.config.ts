import { defineConfig } from 'tsup';

// One entry per public subpath: importing the package root loads no adapter and no vendor SDK.
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    container: 'src/container.ts',
    'adapters/mock/index': 'src/adapters/mock/index.ts',
    'adapters/store/jsonl/index': 'src/adapters/store/jsonl/index.ts',
    'adapters/openai/index': 'src/adapters/openai/index.ts',
    'adapters/gemini/index': 'src/adapters/gemini/index.ts',
    'adapters/search-http/index': 'src/adapters/search-http/index.ts',
    'adapters/openai-compatible/index': 'src/adapters/openai-compatible/index.ts',
    'adapters/tfjs/index': 'src/adapters/tfjs/index.ts',
    'adapters/image/index': 'src/adapters/image/index.ts',
    'adapters/search/index': 'src/adapters/search/index.ts',
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
  external: ['openai', '@google/genai', 'undici', 'zod', 'inversify', 'sharp', 'better-sqlite3', /^@tensorflow\//],
});
