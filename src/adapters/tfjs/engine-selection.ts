import type { OnnxRuntime } from '../onnx/graph/index';
import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type { PolicyEngines } from './engines';
import type { ParsedTfjsPolicySettings } from './settings';
import { createTfjsRolloutEngine } from './tfjs-rollouts';
import { createTfjsTrainingEngine } from './tfjs-training';

const ONNX_RUNTIME = { name: 'onnxruntime-node', install: 'npm install onnxruntime-node@^1.30.0' };

/** ONNX Runtime, loaded only when asked for: onnxruntime-node stays optional. */
async function loadOnnxRuntime(
  load: () => Promise<unknown> = () => import('onnxruntime-node'),
): Promise<OnnxRuntime> {
  const loaded = (await loadWithOptionalPackages('searcher-rl/tfjs', [ONNX_RUNTIME], load)) as OnnxRuntime & {
    default?: OnnxRuntime;
  };
  // onnxruntime-node is CommonJS: its exports may arrive under `default`.
  return loaded.InferenceSession ? loaded : loaded.default!;
}

/**
 * The engines the settings name: tfjs for `rollouts` and `training` by default, ONNX Runtime for
 * `'onnx'`. onnxruntime-node and the ONNX engines' modules are loaded only then, and
 * onnxruntime-node here, before the caller makes any weights: when it is missing, creation fails
 * with nothing to free.
 */
export async function selectEngines(
  settings: ParsedTfjsPolicySettings,
  loadRuntime?: () => Promise<unknown>,
  limits: { keptActivationBytes?: number | undefined; constantWeightBytes?: number | undefined } = {},
): Promise<PolicyEngines> {
  const { keptActivationBytes, constantWeightBytes } = limits;
  const ort =
    settings.rollouts === 'onnx' || settings.training === 'onnx' ? await loadOnnxRuntime(loadRuntime) : null;
  return {
    async createTraining(context) {
      if (!ort || settings.training !== 'onnx') return createTfjsTrainingEngine(context);
      return (await import('./onnx-training')).createOnnxTrainingEngine(ort, context.state.model, {
        ...settings.onnx,
        ...(keptActivationBytes !== undefined && { keptActivationBytes }),
      });
    },
    async createRollouts(context, shape) {
      if (!ort || settings.rollouts !== 'onnx') return createTfjsRolloutEngine(context.state.model, shape);
      return (await import('./onnx-rollouts')).createOnnxRolloutEngine(ort, context.state.model, shape, {
        ...settings.onnx,
        ...(constantWeightBytes !== undefined && { constantWeightBytes }),
      });
    },
  };
}
