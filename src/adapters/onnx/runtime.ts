import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { BackendUnavailableError, InvalidArgumentError } from '../../core/errors';
import { ONNX_EXECUTION_PROVIDERS, type OnnxExecutionProvider } from './settings';

export const CUDA_INSTALL =
  "install onnxruntime-node's CUDA execution provider: on Linux x64, `npm install onnxruntime-node --onnxruntime-node-install=cuda12` with its install script allowed (it downloads the CUDA binaries from NuGet; an .npmrc with onnxruntime-node-install=skip or --ignore-scripts leaves them out), plus CUDA 12 and cuDNN 9 on the library path. Or use executionProvider 'cpu'.";

/** Where onnxruntime-node keeps its native libraries (its CUDA provider is downloaded there). */
function bindingFolder(): string | null {
  try {
    const entry = createRequire(import.meta.url).resolve('onnxruntime-node');
    return join(dirname(entry), '..', 'bin', 'napi-v6', process.platform, process.arch);
  } catch {
    return null;
  }
}

/**
 * Whether an execution provider can be asked for, and if not, why: `listSupportedBackends` names
 * the providers this build of onnxruntime-node knows, and CUDA's library must have been installed.
 */
export function executionProviderProblem(provider: OnnxExecutionProvider): string | null {
  if (provider === 'cpu') return null;
  const known = ort.listSupportedBackends?.() ?? [];
  if (!known.some((b) => b.name === 'cuda')) return `this onnxruntime-node build (${process.platform}/${process.arch}) has no CUDA execution provider (it has ${known.map((b) => b.name).join(', ') || 'none listed'})`;
  const folder = bindingFolder();
  if (folder && !existsSync(join(folder, 'libonnxruntime_providers_cuda.so'))) return `onnxruntime-node's CUDA provider library is not installed (no libonnxruntime_providers_cuda.so in ${folder})`;
  return null;
}

export interface SessionOptions {
  executionProvider: OnnxExecutionProvider;
  intraOpThreads?: number;
  cudaDeviceId: number;
}

/** An inference session on the chosen provider; a provider that cannot run is a BackendUnavailableError saying what to install. */
export async function createInferenceSession(modelPath: string, options: SessionOptions): Promise<ort.InferenceSession> {
  if (!(ONNX_EXECUTION_PROVIDERS as readonly string[]).includes(options.executionProvider)) {
    throw new BackendUnavailableError(options.executionProvider, ONNX_EXECUTION_PROVIDERS, `unknown execution provider; use one of ${ONNX_EXECUTION_PROVIDERS.join(', ')}`);
  }
  const problem = executionProviderProblem(options.executionProvider);
  if (problem) throw new BackendUnavailableError(options.executionProvider, ONNX_EXECUTION_PROVIDERS, `${problem}. To use it, ${CUDA_INSTALL}`);
  const executionProviders: ort.InferenceSession.ExecutionProviderConfig[] = options.executionProvider === 'cuda' ? [{ name: 'cuda', deviceId: options.cudaDeviceId }] : ['cpu'];
  try {
    return await ort.InferenceSession.create(modelPath, {
      executionProviders,
      graphOptimizationLevel: 'all',
      ...(options.intraOpThreads !== undefined && { intraOpNumThreads: options.intraOpThreads }),
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (options.executionProvider === 'cuda' && /cuda|provider|shared library|libcu/i.test(message)) {
      throw new BackendUnavailableError('cuda', ONNX_EXECUTION_PROVIDERS, `ONNX Runtime could not start its CUDA provider (${message.split('\n')[0]}). To use it, ${CUDA_INSTALL}`, { cause: error });
    }
    throw new InvalidArgumentError('modelDir', `ONNX Runtime cannot load '${modelPath}': ${message}`, { cause: error });
  }
}

export { ort };
