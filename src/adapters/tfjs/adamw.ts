import * as tf from '@tensorflow/tfjs';

import type { NamedParameter } from '../engines/transformer/transformer';

export type { NamedParameter };

/**
 * AdamW's settings (torch's update rule): learning rate, betas, epsilon, weight decay, gradient
 * clipping and warm-up.
 */
export interface AdamWSettings {
  learningRate: number;
  beta1: number;
  beta2: number;
  epsilon: number;
  /** Decoupled weight decay (Loshchilov & Hutter), applied to matrices only. */
  weightDecay: number;
  /** Global gradient-norm clip (`null`: none). */
  maxGradNorm: number | null;
  /** Linear warm-up of the learning rate over this many optimizer steps. */
  warmupSteps: number;
}

export interface StepOutcome {
  gradNorm: number;
  applied: boolean;
  skippedReason?: string;
  learningRate: number;
}

/**
 * AdamW with the update of torch.optim.AdamW: p *= 1 - lr*wd; m, v moments; p -= lr/bc1 * m /
 * (sqrt(v)/sqrt(bc2) + eps). Moments are variables created up front, so the number of live
 * tensors does not change from one step to the next.
 */
export class AdamW {
  readonly settings: AdamWSettings;
  private readonly parameters: NamedParameter[];
  readonly firstMoments: tf.Variable[];
  readonly secondMoments: tf.Variable[];
  step = 0;

  constructor(parameters: NamedParameter[], settings: AdamWSettings) {
    this.parameters = parameters;
    this.settings = settings;
    this.firstMoments = parameters.map((p) => tf.variable(tf.zerosLike(p.variable), false));
    this.secondMoments = parameters.map((p) => tf.variable(tf.zerosLike(p.variable), false));
  }

  currentLearningRate(): number {
    const { learningRate, warmupSteps } = this.settings;
    return warmupSteps > 0 ? learningRate * Math.min(1, (this.step + 1) / warmupSteps) : learningRate;
  }

  /**
   * Clips the gradients by their global norm and takes one step. A non-finite norm skips the step
   * (moments and weights untouched) and says so. Disposes nothing it was given.
   */
  apply(grads: readonly tf.Tensor[]): StepOutcome {
    const learningRate = this.currentLearningRate();
    const gradNorm = tf.tidy(() => Math.sqrt(tf.addN(grads.map((g) => tf.sum(tf.square(g)))).dataSync()[0]!));
    if (!Number.isFinite(gradNorm)) {
      return {
        gradNorm,
        applied: false,
        skippedReason: `non-finite gradient norm (${gradNorm}); the step was skipped`,
        learningRate,
      };
    }
    const { beta1, beta2, epsilon, weightDecay, maxGradNorm } = this.settings;
    // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6) when that is below 1.
    const clip = maxGradNorm !== null ? Math.min(1, maxGradNorm / (gradNorm + 1e-6)) : 1;
    this.step += 1;
    const bc1 = 1 - beta1 ** this.step;
    const bc2 = 1 - beta2 ** this.step;
    tf.tidy(() => {
      this.parameters.forEach((p, i) => {
        const g = clip === 1 ? grads[i]! : tf.mul(grads[i]!, clip);
        const m = this.firstMoments[i]!;
        const v = this.secondMoments[i]!;
        m.assign(tf.add(tf.mul(m, beta1), tf.mul(g, 1 - beta1)));
        v.assign(tf.add(tf.mul(v, beta2), tf.mul(tf.square(g), 1 - beta2)));
        const decayed =
          p.decay && weightDecay > 0 ? tf.mul(p.variable, 1 - learningRate * weightDecay) : p.variable;
        const denom = tf.add(tf.div(tf.sqrt(v), Math.sqrt(bc2)), epsilon);
        p.variable.assign(tf.sub(decayed, tf.mul(tf.div(m, denom), learningRate / bc1)));
      });
    });
    return { gradNorm, applied: true, learningRate };
  }

  dispose(): void {
    for (const t of [...this.firstMoments, ...this.secondMoments]) t.dispose();
  }
}
