import type { LossFunction } from '../src/ports/policy-backend';

// The losses bench/training.ts times its training steps with: what each costs, not what it learns.

/**
 * A loss whose gradient is the same small number at every scored token: the step's cost, not its
 * result, is measured. Not declared constant, so the ONNX engine runs it as an RL loss (whose
 * gradient depends on the new log-probs): every forward, the loss, then the backwards.
 */
export const lossFn: LossFunction = (lp) => ({
  value: 0,
  gradNewLogProbs: lp.map((row) => row.map(() => 0.01)),
});

/** The same loss declaring its gradient (as SFT's does): the ONNX engine runs each chunk's forward and backward in one run. */
export const constantGradientLoss = (positions: number[][]): LossFunction =>
  Object.assign((lp: number[][]) => lossFn(lp), {
    constantGradient: positions.map((row) => row.map(() => 0.01)),
  });

/**
 * The same loss anticipating its log-probs, as an on-policy RL update's loss does (a GRPO step's
 * first update, `LossFunction.anticipatedLogProbs`): each chunk's forward and backward in one run
 * fed the gradient at the anticipated log-probs. This loss's gradient does not depend on them, so
 * no correction runs; a PPO loss on policy needed none either (bench:llama's `corrected`).
 */
export const anticipatingLoss = (positions: number[][]): LossFunction =>
  Object.assign((lp: number[][]) => lossFn(lp), {
    anticipatedLogProbs: positions.map((row) => row.map(() => -1)),
  });
