import { PortOutputError, throwIfAborted } from '../../core/errors';
import type { LogProbBatch, LossFunction } from '../../ports/policy-backend';
import { checkLossOutput } from '../../rollout-engine/batch-checks';
import { createKeptBudget } from '../../rollout-engine/kept-budget';
import type { GradientPlan } from './engine';

// One update on an engine whose forward and backward are two runs (the ONNX Runtime engines of the
// tfjs policy's transformer and of the Llama family): every chunk's forward first, since the loss
// needs all the new log-probs, then one backward per chunk fed the loss's g. A loss that declares
// its gradient (`constantGradient`: supervised fine-tuning's) needs no log-probs for it, so where the
// engine has a fused run each chunk's forward and backward are one run, fed that gradient. What a forward keeps
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
  /**
   * Whether a training forward scores as the rollouts did (default true): false where it drops
   * units (LoRA dropout), whose log-probs an anticipating loss cannot foresee, so such a loss runs
   * the two passes.
   */
  deterministic?: boolean;
  /** The forward; `keep` false fetches no activations. `lane`: which of the engine's lanes runs it. */
  forward(chunk: readonly number[], keep: boolean, lane: number): Promise<Forward>;
  /**
   * The gradient of sum upstream * logp - entropyWeight * (entropy sum), at the weights the forward
   * saw, added into the engine's sums (running the forward again when nothing was kept).
   */
  backward(
    chunk: readonly number[],
    forward: Forward,
    upstream: Float32Array,
    entropyWeight: number,
    lane: number,
  ): Promise<void>;
  /** Frees what a forward kept when the budget refused it after all (optional: where it is held elsewhere). */
  release?(forward: Forward, lane: number): void;
  /**
   * The forward and the backward in one run, fed `upstream` before the forward (for a loss whose
   * gradient is known before the log-probs are: `LossFunction.constantGradient`): the gradients
   * added into the engine's sums, the chunk's log-probs and entropy sum returned. Optional.
   */
  fused?(
    chunk: readonly number[],
    upstream: Float32Array,
    entropyWeight: number,
    lane: number,
  ): Promise<Pick<TwoPassForward, 'tokenLogProbs' | 'entropySum'>>;
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
 * refused loss output. `lanes` (default 1): chunks run that many at a time, chunk k of a group on
 * lane k (an engine's data-parallel replicas); whether each keeps is decided before its group runs.
 */
export async function twoPassGradients<Forward extends TwoPassForward>(
  steps: TwoPassSteps<Forward>,
  batch: LogProbBatch,
  lossFn: LossFunction,
  plan: GradientPlan,
  options: { keptActivationBytes: number; provider: string; lanes?: number },
): Promise<TwoPassOutcome> {
  const { chunks, scored, signal } = plan;
  const lanes = Math.max(1, options.lanes ?? 1);
  const groups: number[][] = [];
  for (let c = 0; c < chunks.length; c += lanes)
    groups.push(Array.from({ length: Math.min(lanes, chunks.length - c) }, (_, k) => c + k));
  if (lossFn.anticipatedLogProbs && !lossFn.constantGradient && steps.fused && steps.deterministic !== false)
    return anticipatedGradients(
      steps.fused.bind(steps),
      batch,
      lossFn,
      lossFn.anticipatedLogProbs,
      plan,
      groups,
      options.provider,
    );
  if (lossFn.constantGradient && steps.fused)
    return fusedGradients(
      steps.fused.bind(steps),
      batch,
      lossFn,
      lossFn.constantGradient,
      plan,
      groups,
      options.provider,
    );
  const newLogProbs: number[][] = batch.positions.map(() => []);
  const forwards: Forward[] = [];
  let entropySum = 0;
  const budget = createKeptBudget(options.keptActivationBytes);
  for (const group of groups) {
    throwIfAborted(signal, 'update');
    const tokens = group.map((c) => steps.tokens(chunks[c]!));
    // A group's chunks run together: each one's keep is decided counting the group's earlier keepers.
    let keeping = 0;
    const keep = tokens.map((t) => {
      const k = budget.shouldKeep(keeping + t);
      if (k) keeping += t;
      return k;
    });
    const done = await Promise.all(group.map((c, lane) => steps.forward(chunks[c]!, keep[lane]!, lane)));
    done.forEach((forward, lane) => {
      if (forward.kept && !budget.admit(forward.keptBytes, tokens[lane]!)) {
        forward.kept = null;
        steps.release?.(forward, lane);
      }
      placeLogProbs(batch, chunks[group[lane]!]!, forward.tokenLogProbs, newLogProbs);
      entropySum += forward.entropySum;
      forwards.push(forward);
    });
  }
  const loss = checkLossOutput(lossFn(newLogProbs), batch, options.provider);
  const entropyWeight = plan.entropyCoef / scored;
  for (const group of groups) {
    throwIfAborted(signal, 'update');
    await Promise.all(
      group.map(async (c, lane) => {
        const chunk = chunks[c]!;
        await steps.backward(
          chunk,
          forwards[c]!,
          upstreamOf(chunk, loss.gradNewLogProbs),
          entropyWeight,
          lane,
        );
        // Each chunk's activations go as soon as its gradients are in.
        forwards[c]!.kept = null;
      }),
    );
  }
  return { value: loss.value, metrics: loss.metrics ?? {}, entropy: entropySum / scored };
}

/**
 * A loss with a constant gradient (supervised fine-tuning): each chunk's forward and backward in one
 * run, fed that gradient, so nothing is handed from a forward to its backward; the loss is asked
 * after, for its value and metrics, and refused if its gradient is not the one it declared.
 */
async function fusedGradients(
  fused: NonNullable<TwoPassSteps<TwoPassForward>['fused']>,
  batch: LogProbBatch,
  lossFn: LossFunction,
  gradient: number[][],
  plan: GradientPlan,
  groups: readonly number[][],
  provider: string,
): Promise<TwoPassOutcome> {
  const declared = checkLossOutput({ value: 0, gradNewLogProbs: gradient }, batch, provider).gradNewLogProbs;
  const { newLogProbs, entropySum } = await fusedRuns(fused, batch, plan, groups, declared, plan.entropyCoef);
  const loss = checkLossOutput(lossFn(newLogProbs), batch, provider);
  loss.gradNewLogProbs.forEach((row, i) =>
    row.forEach((g, j) => {
      if (g !== declared[i]![j])
        throw new PortOutputError({
          port: 'policy',
          provider,
          field: `lossFn.constantGradient[${i}][${j}]`,
          message: `is ${declared[i]![j]} but the loss returned ${g} there: a loss whose gradient depends on the log-probs must not declare constantGradient (no update was applied)`,
        });
    }),
  );
  return { value: loss.value, metrics: loss.metrics ?? {}, entropy: entropySum / plan.scored };
}

/**
 * Every chunk's forward and backward in one run, fed `gradient` at its rows (lanes as the groups
 * say): the chunks' log-probs in the batch's rows and their entropy sum.
 */
async function fusedRuns(
  fused: NonNullable<TwoPassSteps<TwoPassForward>['fused']>,
  batch: LogProbBatch,
  plan: GradientPlan,
  groups: readonly number[][],
  gradient: readonly (readonly number[])[],
  entropyCoef: number,
): Promise<{ newLogProbs: number[][]; entropySum: number }> {
  const { chunks, signal } = plan;
  const entropyWeight = entropyCoef / plan.scored;
  const newLogProbs: number[][] = batch.positions.map(() => []);
  let entropySum = 0;
  for (const group of groups) {
    throwIfAborted(signal, 'update');
    const done = await Promise.all(
      group.map((c, lane) => fused(chunks[c]!, upstreamOf(chunks[c]!, gradient), entropyWeight, lane)),
    );
    done.forEach((result, lane) => {
      placeLogProbs(batch, chunks[group[lane]!]!, result.tokenLogProbs, newLogProbs);
      entropySum += result.entropySum;
    });
  }
  return { newLogProbs, entropySum };
}

/**
 * The largest difference, relative to the largest gradient, between the loss's gradient at the
 * anticipated log-probs and at the new ones under which the first gradient stands. The log-probs
 * of one policy scored by its rollout graph and by its training graph differ by float32 rounding
 * (a K3 KL of about 1e-11 between them on SmolLM2's first GRPO update), which moves a policy
 * loss's gradient by a relative 1e-5 or so.
 */
export const ANTICIPATION_TOLERANCE = 1e-4;

/**
 * A loss that says which log-probs it expects (`LossFunction.anticipatedLogProbs`): each chunk's
 * forward and backward in one run fed the loss's gradient there; the loss asked again at the new
 * log-probs; where its gradient differs by more than ANTICIPATION_TOLERANCE (relative to the
 * largest), a second run per chunk adds the difference's gradient (the backward is linear in its
 * upstream), so the sum is the gradient at the new log-probs. `metrics.anticipationCorrected` is 1
 * when that second run was needed.
 */
async function anticipatedGradients(
  fused: NonNullable<TwoPassSteps<TwoPassForward>['fused']>,
  batch: LogProbBatch,
  lossFn: LossFunction,
  anticipated: number[][],
  plan: GradientPlan,
  groups: readonly number[][],
  provider: string,
): Promise<TwoPassOutcome> {
  const shaped =
    anticipated.length === batch.positions.length &&
    anticipated.every((row, i) => Array.isArray(row) && row.length === batch.positions[i]!.length);
  if (!shaped)
    throw new PortOutputError({
      port: 'policy',
      provider,
      field: 'lossFn.anticipatedLogProbs',
      message: 'must have one log-prob per scored position of each row (no update was applied)',
    });
  const first = checkLossOutput(lossFn(anticipated), batch, provider).gradNewLogProbs;
  const { newLogProbs, entropySum } = await fusedRuns(fused, batch, plan, groups, first, plan.entropyCoef);
  const loss = checkLossOutput(lossFn(newLogProbs), batch, provider);
  let largest = 0;
  let off = 0;
  const difference = loss.gradNewLogProbs.map((row, i) =>
    row.map((g, j) => {
      const d = g - first[i]![j]!;
      largest = Math.max(largest, Math.abs(g));
      off = Math.max(off, Math.abs(d));
      return d;
    }),
  );
  // A NaN compares false: corrected, so the NaN reaches the gradient and the optimizer skips.
  const corrected = !(off <= ANTICIPATION_TOLERANCE * largest);
  // The entropy's gradient came with the first runs: the difference's runs take none.
  if (corrected) await fusedRuns(fused, batch, plan, groups, difference, 0);
  return {
    value: loss.value,
    metrics: { ...(loss.metrics ?? {}), anticipationCorrected: corrected ? 1 : 0 },
    entropy: entropySum / plan.scored,
  };
}

/** A chunk's log-probs (row after row, in the chunk's order) put at their rows of `into`. */
function placeLogProbs(
  batch: LogProbBatch,
  chunk: readonly number[],
  tokenLogProbs: Float32Array,
  into: number[][],
): void {
  let at = 0;
  for (const i of chunk) into[i] = batch.positions[i]!.map(() => tokenLogProbs[at++]!);
}

/** The loss's gradient at a chunk's rows, in the order its forward scored them. */
const upstreamOf = (chunk: readonly number[], gradient: readonly (readonly number[])[]) =>
  Float32Array.from(chunk.flatMap((i) => gradient[i]!));
