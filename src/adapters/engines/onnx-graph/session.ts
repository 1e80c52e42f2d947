import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Ort from 'onnxruntime-node';
import { BackendUnavailableError, InvalidArgumentError } from '../../../core/errors';
import { ONNX_EXECUTION_PROVIDERS, type OnnxExecutionProvider } from './execution-providers';

// The one place ONNX Runtime sessions are made, for searcher-rl/onnx (an exported model file) and
// for the tfjs policy's ONNX engines (graphs built in memory). onnxruntime-node comes in as an
// argument: searcher-rl/onnx imports it, the tfjs policy loads it only when an engine asks for it.

/** onnxruntime-node's module (its CommonJS exports). */
export type OnnxRuntime = typeof Ort;

export const CUDA_INSTALL =
  "install onnxruntime-node's CUDA execution provider: on Linux x64, `npm install onnxruntime-node --onnxruntime-node-install=cuda12` with its install script allowed (it downloads the CUDA binaries from NuGet; an .npmrc with onnxruntime-node-install=skip or --ignore-scripts leaves them out), plus CUDA 12 and cuDNN 9 on the library path. Or use executionProvider 'cpu'.";

/** Where onnxruntime-node's CommonJS entry is (throws where it is not installed); a worker lane requires it. */
export function onnxRuntimeEntry(): string {
  return createRequire(import.meta.url).resolve('onnxruntime-node');
}

/** Where onnxruntime-node keeps its native libraries (its CUDA provider is downloaded there). */
function bindingFolder(): string | null {
  try {
    return join(dirname(onnxRuntimeEntry()), '..', 'bin', 'napi-v6', process.platform, process.arch);
  } catch {
    return null;
  }
}

/**
 * Whether an execution provider can be asked for, and if not, why: `listSupportedBackends` names
 * the providers this build of onnxruntime-node knows, and CUDA's library must have been installed.
 */
export function providerProblem(ort: OnnxRuntime, provider: OnnxExecutionProvider): string | null {
  if (provider === 'cpu') return null;
  const known = ort.listSupportedBackends?.() ?? [];
  if (!known.some((b) => b.name === 'cuda'))
    return `this onnxruntime-node build (${process.platform}/${process.arch}) has no CUDA execution provider (it has ${known.map((b) => b.name).join(', ') || 'none listed'})`;
  const folder = bindingFolder();
  if (folder && !existsSync(join(folder, 'libonnxruntime_providers_cuda.so')))
    return `onnxruntime-node's CUDA provider library is not installed (no libonnxruntime_providers_cuda.so in ${folder})`;
  return null;
}

export interface OnnxSessionOptions {
  /** Default `cpu`. */
  executionProvider?: OnnxExecutionProvider;
  /** The GPU, with executionProvider `cuda` (default 0). */
  cudaDeviceId?: number;
  /** ONNX Runtime's threads inside one operator (default: its own, one per core). */
  intraOpThreads?: number;
  /**
   * Operators one after another on a single inter-op thread: the tfjs policy's graphs are chains of
   * small ops, where a parallel executor only adds hand-offs.
   */
  sequential?: boolean;
  /**
   * Whether idle intra-op threads spin waiting for the next operator (ONNX Runtime's default) or
   * sleep (`false`). On a machine whose cores are shared, a spinning thread takes a core another
   * process needs, and an operator waits for the thread that lost its core: the ONNX training step
   * at 2 threads ran 1.9x faster with spinning off, in paired runs at load 5 on 2 cores, and
   * the rollouts 1.3x (load 2-3) to 3x (load 5).
   */
  spinning?: boolean;
  /**
   * Whether the session keeps the memory of its runs in its own arena for the next run (ONNX
   * Runtime's default, `true`) or returns it after each run (`false`): an arena holds its largest
   * run's memory for as long as the session lives, so several large sessions of one model add up.
   */
  memoryArena?: boolean;
}

/** ONNX Runtime's session options for `options` (plain data: a worker lane gets the same). */
export function onnxSessionOptions(options: OnnxSessionOptions = {}): Ort.InferenceSession.SessionOptions {
  const executionProviders: Ort.InferenceSession.ExecutionProviderConfig[] =
    (options.executionProvider ?? 'cpu') === 'cuda'
      ? [{ name: 'cuda', deviceId: options.cudaDeviceId ?? 0 }]
      : ['cpu'];
  return {
    executionProviders,
    graphOptimizationLevel: 'all',
    ...(options.intraOpThreads !== undefined && { intraOpNumThreads: options.intraOpThreads }),
    ...(options.sequential && { interOpNumThreads: 1, executionMode: 'sequential' }),
    ...(options.memoryArena === false && { enableCpuMemArena: false }),
    ...(options.spinning === false && {
      extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
    }),
  };
}

/**
 * An inference session on the chosen provider, from a model file or the bytes of a built graph
 * (`encodeOnnxModel`). A provider that cannot run is a BackendUnavailableError saying what to
 * install; a model file ONNX Runtime cannot load is an InvalidArgumentError on `modelDir`.
 */
export async function createOnnxSession(
  ort: OnnxRuntime,
  model: string | Uint8Array,
  options: OnnxSessionOptions = {},
): Promise<Ort.InferenceSession> {
  const provider = options.executionProvider ?? 'cpu';
  if (!(ONNX_EXECUTION_PROVIDERS as readonly string[]).includes(provider)) {
    throw new BackendUnavailableError({
      backend: provider,
      known: ONNX_EXECUTION_PROVIDERS,
      message: `unknown execution provider; use one of ${ONNX_EXECUTION_PROVIDERS.join(', ')}`,
    });
  }
  const problem = providerProblem(ort, provider);
  if (problem)
    throw new BackendUnavailableError({
      backend: provider,
      known: ONNX_EXECUTION_PROVIDERS,
      message: `${problem}. To use it, ${CUDA_INSTALL}`,
    });
  const sessionOptions = onnxSessionOptions(options);
  try {
    return typeof model === 'string'
      ? await ort.InferenceSession.create(model, sessionOptions)
      : await ort.InferenceSession.create(model, sessionOptions);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (provider === 'cuda' && /cuda|provider|shared library|libcu/i.test(message)) {
      throw new BackendUnavailableError({
        backend: 'cuda',
        known: ONNX_EXECUTION_PROVIDERS,
        message: `ONNX Runtime could not start its CUDA provider (${message.split('\n')[0]}). To use it, ${CUDA_INSTALL}`,
        cause: error,
      });
    }
    // A graph built in memory that ONNX Runtime refuses is an error in this package, not in the caller's model.
    if (typeof model !== 'string') throw error;
    throw new InvalidArgumentError({
      argument: 'modelDir',
      message: `ONNX Runtime cannot load '${model}': ${message}`,
      cause: error,
    });
  }
}
