import type { OnnxRuntime } from '../engines/onnx-graph/index';
import { loadWithOptionalPackages } from '../../provider-utils/optional-package';
import type * as tf from '@tensorflow/tfjs';
import type { CacheShape, RolloutEngine, TrainingEngine } from '../engines/engine';
import type { ParsedTfjsPolicySettings } from './settings';
import type { PolicyContext } from './state';
import { createTfjsRolloutEngine } from '../engines/transformer/tfjs-rollouts';
import { createTfjsTrainingEngine } from '../engines/transformer/tfjs-training';

/** The tfjs policy's training engine: gradients as tfjs tensors, one per model parameter (the caller disposes them). */
export type TfjsTrainingEngine = TrainingEngine<tf.Tensor[]>;

/** Makes a policy's engines once its model exists. */
export interface PolicyEngines {
  createTraining(context: PolicyContext): Promise<TfjsTrainingEngine>;
  createRollouts(context: PolicyContext, shape: CacheShape): Promise<RolloutEngine>;
}

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
      if (!ort || settings.training !== 'onnx') return createTfjsTrainingEngine(context.state.model);
      return (await import('../engines/transformer/onnx-training')).createOnnxTrainingEngine(
        ort,
        context.state.model,
        {
          intraOpThreads: settings.onnx.trainingThreads ?? settings.onnx.intraOpThreads,
          lanes: settings.onnx.trainingLanes ?? 1,
          ...(keptActivationBytes !== undefined && { keptActivationBytes }),
        },
      );
    },
    async createRollouts(context, shape) {
      if (!ort || settings.rollouts !== 'onnx') return createTfjsRolloutEngine(context.state.model, shape);
      return (await import('../engines/transformer/onnx-rollouts')).createOnnxRolloutEngine(
        ort,
        context.state.model,
        shape,
        {
          intraOpThreads: settings.onnx.intraOpThreads,
          ...(constantWeightBytes !== undefined && { constantWeightBytes }),
        },
      );
    },
  };
}
