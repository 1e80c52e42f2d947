import * as tf from '@tensorflow/tfjs';

import { AdamWSchedule, type AdamWSettings, type AdamWStepOutcome } from '../engines/adamw-schedule';
import type { NamedParameter } from '../engines/transformer/transformer';

export type { NamedParameter, AdamWSettings };

/**
 * AdamW with the update of torch.optim.AdamW: p *= 1 - lr*wd; m, v moments; p -= lr/bc1 * m /
 * (sqrt(v)/sqrt(bc2) + eps). Moments are variables created up front, so the number of live
 * tensors does not change from one step to the next.
 */
export class AdamW extends AdamWSchedule {
  private readonly parameters: NamedParameter[];
  readonly firstMoments: tf.Variable[];
  readonly secondMoments: tf.Variable[];

  constructor(parameters: NamedParameter[], settings: AdamWSettings) {
    super(settings);
    this.parameters = parameters;
    this.firstMoments = parameters.map((p) => tf.variable(tf.zerosLike(p.variable), false));
    this.secondMoments = parameters.map((p) => tf.variable(tf.zerosLike(p.variable), false));
  }

  /**
   * Clips the gradients by their global norm and takes one step. A non-finite norm skips the step
   * (moments and weights untouched) and says so. Disposes nothing it was given.
   */
  apply(grads: readonly tf.Tensor[]): AdamWStepOutcome {
    const gradNorm = tf.tidy(() => Math.sqrt(tf.addN(grads.map((g) => tf.sum(tf.square(g)))).dataSync()[0]!));
    const start = this.beginStep(gradNorm);
    if (start.skipped) return start.skipped;
    const { learningRate, clip, biasCorrection1: bc1, biasCorrection2: bc2 } = start;
    const { beta1, beta2, epsilon, weightDecay } = this.settings;
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
