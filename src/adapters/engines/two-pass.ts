import { throwIfAborted } from '../../core/errors';
import type { LogProbBatch, LossFunction } from '../../ports/policy-backend';
import { checkLossOutput } from '../../rollout-engine/batch-checks';
import { createKeptBudget } from '../../rollout-engine/kept-budget';
import type { GradientPlan } from './engine';

// One update on an engine whose forward and backward are two runs (the ONNX Runtime engines of the
// tfjs policy's transformer and of the Llama family): every chunk's forward first, since the loss
// needs all the new log-probs, then one backward per chunk fed the loss's g. What a forward keeps
// for its backward adds up over the update: whether a chunk keeps is decided from its tokens before
// its forward runs (kept-budget.ts), so a chunk that would not fit fetches only its log-probs and
// its backward runs its forward again.

/** One chunk's forward as a two-pass engine gives it. */
export interface TwoPassForward {
  /** The log-probs of the chunk's scored positions, row after row in the chunk's order. */
  readonly tokenLogProbs: Float32Array;
  readonly entropySum: number;
  /** The activations kept for the backward; null when not kept, or once dropped. */
  kept: object | null;
  /** Their bytes (0 when not kept). */
  readonly keptBytes: number;
}

/** An engine's two runs for a chunk of batch rows. */
export interface TwoPassSteps<Forward extends TwoPassForward> {
  /** The tokens a chunk's forward runs over (rows x padded length): what its kept bytes are predicted from. */
  tokens(chunk: readonly number[]): number;
  /** The forward; `keep` false fetches no activations. */
  forward(chunk: readonly number[], keep: boolean): Promise<Forward>;
  /**
   * The gradient of sum upstream * logp - entropyWeight * (entropy sum), at the weights the forward
   * saw, added into the engine's sums (running the forward again when nothing was kept).
   */
  backward(
    chunk: readonly number[],
    forward: Forward,
    upstream: Float32Array,
    entropyWeight: number,
  ): Promise<void>;
}

/** What the loss said, and the mean entropy over the scored positions. */
export interface TwoPassOutcome {
  value: number;
  metrics: Record<string, number>;
  entropy: number;
}

/**
 * Runs `plan`'s chunks through `steps`: forwards (keeping activations while `keptActivationBytes`
 * holds them), the loss on every new log-prob, then backwards. `provider` names the policy in a
 * refused loss output.
 */
export async function twoPassGradients<Forward extends TwoPassForward>(
  steps: TwoPassSteps<Forward>,
  batch: LogProbBatch,
  lossFn: LossFunction,
  plan: GradientPlan,
  options: { keptActivationBytes: number; provider: string },
): Promise<TwoPassOutcome> {
  const { chunks, scored, signal } = plan;
  const newLogProbs: number[][] = batch.positions.map(() => []);
  const forwards: Forward[] = [];
  let entropySum = 0;
  const budget = createKeptBudget(options.keptActivationBytes);
  for (const chunk of chunks) {
    throwIfAborted(signal, 'update');
    const tokens = steps.tokens(chunk);
    const forward = await steps.forward(chunk, budget.shouldKeep(tokens));
    if (forward.kept && !budget.admit(forward.keptBytes, tokens)) forward.kept = null;
    let at = 0;
    for (const i of chunk) newLogProbs[i] = batch.positions[i]!.map(() => forward.tokenLogProbs[at++]!);
    entropySum += forward.entropySum;
    forwards.push(forward);
  }
  const loss = checkLossOutput(lossFn(newLogProbs), batch, options.provider);
  const entropyWeight = plan.entropyCoef / scored;
  for (const [c, chunk] of chunks.entries()) {
    throwIfAborted(signal, 'update');
    const upstream = Float32Array.from(chunk.flatMap((i) => loss.gradNewLogProbs[i]!));
    await steps.backward(chunk, forwards[c]!, upstream, entropyWeight);
    // Each chunk's activations go as soon as its gradients are in.
    forwards[c]!.kept = null;
  }
  return { value: loss.value, metrics: loss.metrics ?? {}, entropy: entropySum / scored };
}
