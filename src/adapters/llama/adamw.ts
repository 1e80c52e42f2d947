// AdamW on float32 arrays, the update of torch.optim.AdamW (the tfjs policy's adamw.ts, without
// tfjs): p *= 1 - lr * wd (matrices only); m, v moments; p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps),
// each element in float32 by the WebAssembly kernel of engines/adamw-kernel.ts.
// The global gradient norm is clipped as torch.nn.utils.clip_grad_norm_ does (engines/adamw-schedule.ts).

import { adamwStep } from '../engines/adamw-kernel';
import { AdamWSchedule, type AdamWStepOutcome } from '../engines/adamw-schedule';

export class FloatAdamW extends AdamWSchedule {
  readonly first = new Map<string, Float32Array>();
  readonly second = new Map<string, Float32Array>();

  /**
   * One step over `parameters` (updated in place) with `gradients` of the same names; `decays`
   * says which take weight decay. A non-finite gradient norm skips the step and says so.
   */
  apply(
    parameters: ReadonlyMap<string, Float32Array>,
    gradients: ReadonlyMap<string, Float32Array>,
    decays: (name: string) => boolean,
  ): AdamWStepOutcome {
    let squares = 0;
    for (const g of gradients.values()) for (let i = 0; i < g.length; i++) squares += g[i]! * g[i]!;
    const gradNorm = Math.sqrt(squares);
    const start = this.beginStep(gradNorm);
    if (start.skipped) return start.skipped;
    const { learningRate, clip } = start;
    const { beta1, beta2, epsilon, weightDecay } = this.settings;
    const bc2 = Math.sqrt(start.biasCorrection2);
    const stepSize = learningRate / start.biasCorrection1;
    for (const [name, p] of parameters) {
      const g = gradients.get(name);
      if (!g) continue;
      let m = this.first.get(name);
      let v = this.second.get(name);
      if (!m || !v) {
        m = new Float32Array(p.length);
        v = new Float32Array(p.length);
        this.first.set(name, m);
        this.second.set(name, v);
      }
      const decay = decays(name) && weightDecay > 0 ? 1 - learningRate * weightDecay : 1;
      adamwStep(p, g, m, v, { clip, beta1, beta2, decay, stepSize, inverseBc2: 1 / bc2, epsilon });
    }
    return { gradNorm, applied: true, learningRate };
  }
}
