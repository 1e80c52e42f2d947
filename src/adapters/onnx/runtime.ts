import * as ort from 'onnxruntime-node';
import { providerProblem } from '../engines/onnx-graph/session';
import type { OnnxExecutionProvider } from './settings';

/**
 * Whether an execution provider can be asked for, and if not, why: `listSupportedBackends` names
 * the providers this build of onnxruntime-node knows, and CUDA's library must have been installed.
 */
export function executionProviderProblem(provider: OnnxExecutionProvider): string | null {
  return providerProblem(ort, provider);
}

export { ort };
