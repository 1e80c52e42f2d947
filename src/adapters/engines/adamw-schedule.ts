// What the two AdamWs share, on tfjs variables (tfjs/adamw.ts) and on float32 arrays
// (llama/adamw.ts): torch.optim.AdamW's settings, its learning-rate warm-up, and the start of a
// step: a non-finite gradient norm skips it, else the norm is clipped as
// torch.nn.utils.clip_grad_norm_ does and the bias corrections are those of the counted step.

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

/** What one AdamW step did: the global gradient norm, whether it was applied (else why not), its learning rate. */
export interface AdamWStepOutcome {
  gradNorm: number;
  applied: boolean;
  skippedReason?: string;
  learningRate: number;
}

/** A started step's factors (`AdamWSchedule.beginStep`). */
export interface AdamWStepFactors {
  skipped?: undefined;
  learningRate: number;
  /** The gradients' scale: max_norm / (norm + 1e-6) when that is below 1, else 1. */
  clip: number;
  /** 1 - beta1^t and 1 - beta2^t at the counted step t. */
  biasCorrection1: number;
  biasCorrection2: number;
}

/** The step counter, warm-up and step start of an AdamW (see the file's head). */
export abstract class AdamWSchedule {
  step = 0;

  constructor(readonly settings: AdamWSettings) {}

  currentLearningRate(): number {
    const { learningRate, warmupSteps } = this.settings;
    return warmupSteps > 0 ? learningRate * Math.min(1, (this.step + 1) / warmupSteps) : learningRate;
  }

  /** Starts a step at the global gradient norm: a non-finite one is skipped (not counted) and says so. */
  protected beginStep(gradNorm: number): { skipped: AdamWStepOutcome } | AdamWStepFactors {
    const learningRate = this.currentLearningRate();
    if (!Number.isFinite(gradNorm))
      return {
        skipped: {
          gradNorm,
          applied: false,
          skippedReason: `non-finite gradient norm (${gradNorm}); the step was skipped`,
          learningRate,
        },
      };
    const { beta1, beta2, maxGradNorm } = this.settings;
    const clip = maxGradNorm !== null ? Math.min(1, maxGradNorm / (gradNorm + 1e-6)) : 1;
    this.step += 1;
    return {
      learningRate,
      clip,
      biasCorrection1: 1 - beta1 ** this.step,
      biasCorrection2: 1 - beta2 ** this.step,
    };
  }
}
