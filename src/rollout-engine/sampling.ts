import type { Random } from '../core/random';

export interface SamplingOptions {
  /** 0: greedy. Otherwise the log-probs are assumed to be taken at this temperature already. */
  temperature: number;
  /** Nucleus mass in (0, 1]; 1 samples from the whole distribution. */
  topP: number;
}

/**
 * One token id from log-probs over the vocabulary: the argmax (lowest id among ties) at temperature
 * 0, a categorical draw at topP >= 1, else a draw from the smallest set of most likely tokens whose
 * mass reaches topP (ties broken by lower id). Exactly one `random.nextFloat()` per sampled token
 * and none when greedy: rollouts' streams are checkpointed, and a resumed run must draw the same
 * numbers as an uninterrupted one.
 */
export function sampleToken(logProbs: Float32Array, options: SamplingOptions, random: Random): number {
  const { temperature, topP } = options;
  if (temperature === 0) {
    let best = 0;
    for (let i = 1; i < logProbs.length; i++) if (logProbs[i]! > logProbs[best]!) best = i;
    return best;
  }
  if (topP >= 1) {
    let u = random.nextFloat();
    for (let i = 0; i < logProbs.length; i++) {
      u -= Math.exp(logProbs[i]!);
      if (u < 0) return i;
    }
    // Rounding can leave the summed probabilities just under the draw.
    return logProbs.length - 1;
  }
  const order = Array.from(logProbs.keys()).sort((a, b) => logProbs[b]! - logProbs[a]! || a - b);
  let mass = 0;
  let cut = 0;
  while (cut < order.length && mass < topP) mass += Math.exp(logProbs[order[cut++]!]!);
  // Scaling the draw by the nucleus mass renormalises without dividing every probability.
  let u = random.nextFloat() * mass;
  for (let i = 0; i < cut; i++) {
    u -= Math.exp(logProbs[order[i]!]!);
    if (u < 0) return order[i]!;
  }
  return order[cut - 1]!;
}
