import type { OptionalPackage } from '../../provider-utils/optional-package';

// The part of node-llama-cpp 3.21's API used here, written out so that the project type-checks
// without the package (an optional peer dependency, imported when a sampler is made).
export interface LlamaCppSampleOptions {
  temperature: number;
  /** null leaves the sampler out of llama.cpp's chain (0 or undefined would mean the whole vocabulary sorted, or 40). */
  topK: null;
  topP: null;
  minP: number;
  seed?: number;
}
export type LlamaCppInputItem =
  | number
  | [
      token: number,
      options: {
        generateNext: {
          token?: boolean;
          confidence?: boolean;
          probabilities?: boolean;
          options: LlamaCppSampleOptions;
        };
      },
    ];
export interface LlamaCppSequence {
  readonly disposed: boolean;
  controlledEvaluate(
    input: LlamaCppInputItem[],
  ): Promise<
    Array<
      | { next: { token?: number | null; confidence?: number; probabilities?: Map<number, number> } }
      | undefined
    >
  >;
  dispose(): void;
}
export interface LlamaCppContext {
  readonly sequencesLeft: number;
  getSequence(): LlamaCppSequence;
  dispose(): Promise<void>;
}
export interface LlamaCppModel {
  createContext(options: {
    sequences: number;
    contextSize: number;
    threads?: number;
    lora?: { adapters: Array<{ filePath: string; scale: number }> };
  }): Promise<LlamaCppContext>;
  dispose(): Promise<void>;
}
export interface LlamaCppLibrary {
  LlamaLogLevel: { error: string };
  getLlama(options: { gpu: LlamaCppGpu; build: 'never'; logLevel: string; maxThreads?: number }): Promise<{
    readonly gpu: false | string;
    loadModel(options: { modelPath: string }): Promise<LlamaCppModel>;
  }>;
}

/**
 * node-llama-cpp, pinned: its prebuilt CPU, CUDA and Vulkan binaries ship as npm packages
 * (@node-llama-cpp/linux-x64, -cuda, -vulkan...), so nothing is downloaded or built at install
 * (.npmrc skips its postinstall check) nor at run time (`build: 'never'`).
 */
export const LLAMA_CPP_PACKAGE: OptionalPackage = {
  name: 'node-llama-cpp',
  install: 'npm install node-llama-cpp@3.21.1',
};

/** Where llama.cpp computes: `false` the CPU, else a GPU backend of node-llama-cpp's prebuilt binaries. */
export type LlamaCppGpu = false | 'auto' | 'cuda' | 'vulkan' | 'metal';

/**
 * node-llama-cpp 3.21.1 samples every row of a decoded batch at once, each in its own native worker
 * on libuv's thread pool, and those workers read the same llama_context's logits concurrently
 * (llama.cpp reorders a batch's outputs lazily, on the first read): with more than two rows some
 * read another row's logits. Measured: 16 identical prompts decoded greedily gave 4 different
 * continuations, and sampled log-probs differed from the trainer's by up to 25 nats from the
 * second token on; with UV_THREADPOOL_SIZE=1, or with this, all 16 agree. The context's native
 * `sampleToken` (internal to the pinned version) is queued here so that one runs at a time; the
 * batch's forward stays shared.
 */
export function serializeSampling(context: LlamaCppContext): void {
  const native = (context as unknown as { _ctx?: { sampleToken?: (...args: unknown[]) => Promise<unknown> } })
    ._ctx;
  const sampleToken = native?.sampleToken;
  if (!native || typeof sampleToken !== 'function')
    throw new Error(
      'node-llama-cpp has no context.sampleToken to serialise: this code is written for node-llama-cpp 3.21.1',
    );
  let queue: Promise<unknown> = Promise.resolve();
  // The addon's methods are read-only on its prototype: an own property shadows it.
  Object.defineProperty(native, 'sampleToken', {
    value: (...args: unknown[]) => {
      const run = queue.then(() => sampleToken.apply(native, args));
      queue = run.catch(() => undefined);
      return run;
    },
  });
}
