import { AbortedError, InvalidArgumentError } from '../errors';
import { permutation, type Random } from '../random';
import type { Trajectory } from '../trajectory/trajectory';
import type { FreshNames, SftExample } from './fresh-names';
import type { LogProbBatch, LossFunction, PolicyBackend, UpdateResult } from '../../ports/policy-backend';
import { buildUpdateBatch, createLossFunction, type LossSettings, type UpdateBatch } from './update-batch';
import { mean } from '../stats';

export type { SftExample } from './fresh-names';

export interface PolicyUpdateSettings {
  loss: LossSettings;
  /** Passes over the batch (verl's ppo_epochs). */
  ppoEpochs: number;
  /** Sequences per optimizer step; `null`: the whole batch in one step. */
  miniBatchSize: number | null;
  /** Entropy bonus coefficient (backend-side; 0 in the seed's runs). */
  entropyCoef: number;
  /** The sampling temperature, so that new log-probs compare with the recorded ones. */
  temperature: number;
  /** Default true: only policy tokens are trained (docs/method.md#state-masking). */
  stateMasking?: boolean;
}

/** A step's update figures, as the summary gives them and the step's metrics copy them. */
export interface UpdateFigures {
  loss: number;
  clipFraction: number;
  kl: number;
  entropy: number;
  /** Mean and max over the optimizer steps with a finite gradient norm (skipped steps are left out). */
  gradNorm: number;
  gradNormMax: number;
}

/** What a step's updates did, averaged over the optimizer steps that ran. */
export interface PolicyUpdateSummary extends UpdateFigures {
  /** Optimizer steps attempted (ppoEpochs x minibatches). */
  updates: number;
  applied: number;
  /** Steps skipped by the backend (e.g. a non-finite gradient norm), with their reasons. */
  skipped: string[];
  /** Policy tokens trained on by applied steps, summed over epochs (a no-signal step's are not counted). */
  tokens: number;
  /**
   * Optimizer steps on a minibatch with no learning signal (every advantage 0, no KL or entropy
   * term: the loss's gradient is exactly 0), taken without the minibatch's forward and backward.
   */
  noSignal: number;
  /**
   * Updates whose loss anticipated the rollout's log-probs and whose engine had to add a second
   * run a chunk for the difference (`metrics.anticipationCorrected`): off policy, the first
   * update's gradient was not the one anticipated.
   */
  corrected: number;
  sequences: number;
  results: UpdateResult[];
}

function slice(batch: UpdateBatch, indices: readonly number[]): UpdateBatch {
  return {
    inputIds: indices.map((i) => batch.inputIds[i]!),
    positions: indices.map((i) => batch.positions[i]!),
    oldLogProbs: indices.map((i) => batch.oldLogProbs[i]!),
    advantages: indices.map((i) => batch.advantages[i]!),
    sampleIds: indices.map((i) => batch.sampleIds[i]!),
    ...(batch.referenceLogProbs && { referenceLogProbs: indices.map((i) => batch.referenceLogProbs![i]!) }),
  };
}

/**
 * Whether a minibatch's loss has a zero gradient whatever the policy's log-probs: every policy
 * loss is the advantage times a function of the ratio (POLICY_LOSSES), so with every advantage 0
 * and neither a KL nor an entropy term, nothing reaches the weights but the optimizer's own step.
 */
function hasNoSignal(mini: UpdateBatch, settings: PolicyUpdateSettings): boolean {
  return settings.loss.klCoef === 0 && settings.entropyCoef === 0 && mini.advantages.every((a) => a === 0);
}

/**
 * The optimizer step of a minibatch with no signal, without its forward and backward: the backend
 * updates on one scored token with a zero loss gradient, so the weights get exactly the step the
 * whole minibatch's (zero) gradient gives them (AdamW's moments, weight decay and schedule
 * included). Its loss is 0; it reports no KL, clip fraction or entropy (they would be one token's).
 */
async function zeroGradientStep(
  policy: PolicyBackend,
  mini: UpdateBatch,
  temperature: number,
  signal: AbortSignal | undefined,
): Promise<UpdateResult> {
  const position = mini.positions[0]![0]!;
  const lossFn: LossFunction = () => ({ value: 0, gradNewLogProbs: [[0]], metrics: {} });
  const result = await policy.update(
    { inputIds: [mini.inputIds[0]!.slice(0, position + 1)], positions: [[position]], temperature },
    lossFn,
    { entropyCoef: 0, ...(signal && { signal }) },
  );
  return { ...result, value: 0, metrics: {} };
}

/** The mean of the finite values (a skipped minibatch reports NaN). */
const finiteMean = (values: readonly number[]) => mean(values.filter((v) => Number.isFinite(v)));

export function checkPolicyUpdateSettings(settings: PolicyUpdateSettings): void {
  if (!(Number.isInteger(settings.ppoEpochs) && settings.ppoEpochs > 0))
    throw new InvalidArgumentError({
      argument: 'ppoEpochs',
      message: `must be a positive integer, got ${String(settings.ppoEpochs)}`,
    });
  if (
    settings.miniBatchSize !== null &&
    !(Number.isInteger(settings.miniBatchSize) && settings.miniBatchSize > 0)
  ) {
    throw new InvalidArgumentError({
      argument: 'miniBatchSize',
      message: `must be a positive integer or null, got ${String(settings.miniBatchSize)}`,
    });
  }
  if (!(Number.isFinite(settings.entropyCoef) && settings.entropyCoef >= 0))
    throw new InvalidArgumentError({
      argument: 'entropyCoef',
      message: `must be >= 0, got ${String(settings.entropyCoef)}`,
    });
}

/**
 * The update half of a GRPO/GSPO step: `ppoEpochs` passes over the trajectories that have an
 * advantage, each split into shuffled minibatches of `miniBatchSize` sequences, one optimizer step
 * per minibatch with the core's loss (state masking: only policy tokens are scored, unless
 * `stateMasking` is false). The old log-probs are the ones recorded at generation, token ids
 * exactly as generated.
 */
export async function updatePolicy(
  policy: PolicyBackend,
  trajectories: readonly Trajectory[],
  settings: PolicyUpdateSettings,
  options: { random: Random; signal?: AbortSignal; reference?: Pick<PolicyBackend, 'logProbs'> },
): Promise<PolicyUpdateSummary> {
  checkPolicyUpdateSettings(settings);
  const initialReference = settings.loss.klReference === 'initial';
  if (initialReference && !options.reference)
    throw new InvalidArgumentError({
      argument: 'reference',
      message: "klReference 'initial' needs the frozen initial policy to score the tokens (its logProbs)",
    });
  const { recomputed, ...batch } = buildUpdateBatch(trajectories, {
    stateMasking: settings.stateMasking ?? true,
  });
  const n = batch.inputIds.length;
  if (recomputed.length > 0) {
    // Observation tokens were never sampled: their old log-probs are the policy's before this
    // step's update (as verl recomputes old_log_prob), scored once for all epochs.
    const scored = await policy.logProbs(
      { inputIds: batch.inputIds, positions: batch.positions, temperature: settings.temperature },
      options.signal ? { signal: options.signal } : {},
    );
    for (const { row, index } of recomputed) batch.oldLogProbs[row]![index] = scored[row]![index]!;
  }
  const summary: PolicyUpdateSummary = {
    updates: 0,
    applied: 0,
    skipped: [],
    loss: 0,
    clipFraction: 0,
    kl: 0,
    entropy: 0,
    gradNorm: 0,
    gradNormMax: 0,
    tokens: 0,
    noSignal: 0,
    corrected: 0,
    sequences: n,
    results: [],
  };
  if (n === 0) return summary;
  if (initialReference) {
    // Scored once per step: the reference is frozen, so every epoch compares with the same numbers.
    batch.referenceLogProbs = await options.reference!.logProbs(
      { inputIds: batch.inputIds, positions: batch.positions, temperature: settings.temperature },
      options.signal ? { signal: options.signal } : {},
    );
  }
  const size = settings.miniBatchSize ?? n;
  for (let epoch = 0; epoch < settings.ppoEpochs; epoch++) {
    const order = size >= n ? batch.inputIds.map((_, i) => i) : permutation(n, options.random);
    for (let start = 0; start < n; start += size) {
      if (options.signal?.aborted)
        throw new AbortedError({ what: 'updatePolicy', cause: options.signal.reason });
      const mini = slice(batch, order.slice(start, start + size));
      const noSignal = hasNoSignal(mini, settings);
      const result = noSignal
        ? await zeroGradientStep(policy, mini, settings.temperature, options.signal)
        : await policy.update(
            { inputIds: mini.inputIds, positions: mini.positions, temperature: settings.temperature },
            // The step's first update trains the weights that sampled its tokens.
            createLossFunction(mini, settings.loss, { onPolicy: epoch === 0 && start === 0 }),
            { entropyCoef: settings.entropyCoef, ...(options.signal && { signal: options.signal }) },
          );
      summary.results.push(result);
      summary.updates++;
      if (noSignal) summary.noSignal++;
      if (result.metrics?.anticipationCorrected === 1) summary.corrected++;
      if (result.applied) {
        summary.applied++;
        if (!noSignal) summary.tokens += mini.positions.reduce((t, row) => t + row.length, 0);
      } else summary.skipped.push(result.skippedReason ?? 'not applied');
    }
  }
  const results = summary.results;
  summary.loss = finiteMean(results.map((r) => r.value));
  summary.clipFraction = finiteMean(results.map((r) => r.metrics?.clipFraction ?? NaN));
  summary.kl = finiteMean(results.map((r) => r.metrics?.kl ?? NaN));
  summary.entropy = finiteMean(results.map((r) => r.metrics?.entropy ?? NaN));
  summary.gradNorm = finiteMean(results.map((r) => r.gradNorm));
  summary.gradNormMax = Math.max(0, ...results.map((r) => r.gradNorm).filter((v) => Number.isFinite(v)));
  return summary;
}

/** A supervised example: a token sequence and the positions that are policy output (mask 1). */

/**
 * Demonstrations for supervised warm-up, from trajectories (e.g. a scripted or oracle policy's):
 * the same state masking as RL, so observation, prompt, forced and answer tokens get no loss.
 */
export function sftExamples(trajectories: readonly Trajectory[]): SftExample[] {
  return trajectories.flatMap((t, i) => {
    if (t.fullInputIds.length !== t.lossMask.length)
      throw new InvalidArgumentError({
        argument: `trajectories[${i}].lossMask`,
        message: `has ${t.lossMask.length} entries for ${t.fullInputIds.length} tokens`,
      });
    const positions: number[] = [];
    t.lossMask.forEach((m, p) => {
      if (m === 1 && p > 0) positions.push(p);
    });
    if (positions.length === 0) return [];
    return [{ inputIds: t.fullInputIds.slice(0, positions[positions.length - 1]! + 1), positions }];
  });
}

/** Cross-entropy on the demonstrated tokens: loss = -mean logp, d loss / d logp = -1 / N. */
export function sftLossFunction(batch: Pick<LogProbBatch, 'positions'>): LossFunction {
  const count = batch.positions.reduce((n, row) => n + row.length, 0);
  const constantGradient = batch.positions.map((row) => row.map(() => -1 / count));
  const loss = (newLogProbs: number[][]) => {
    let sum = 0;
    for (const row of newLogProbs) for (const v of row) sum += v;
    return {
      value: -sum / count,
      gradNewLogProbs: constantGradient.map((row) => [...row]),
      metrics: { nll: -sum / count },
    };
  };
  return Object.assign(loss, { constantGradient });
}

/** What `runSft` did: the loss per epoch and the updates applied and skipped. */
export interface SftSummary {
  /** Mean negative log-likelihood per demonstrated token, per epoch. */
  epochLoss: number[];
  updates: number;
  skipped: number;
}

/**
 * One epoch's minibatches: the examples shuffled, then sorted by length within pools of 16
 * batches so that a batch pads little (a batch costs its longest sequence), and the batches
 * shuffled again so that lengths do not follow a schedule. Every example once per epoch.
 */
export function lengthBucketedBatches(
  examples: readonly { inputIds: readonly number[] }[],
  batchSize: number,
  random: Random,
): number[][] {
  const order = permutation(examples.length, random);
  const pool = batchSize * 16;
  const batches: number[][] = [];
  for (let start = 0; start < order.length; start += pool) {
    // A stable sort by length alone: examples of the same length keep their shuffled order (by
    // index, the demonstrations of one prompt, which sit together, would share a batch).
    const sorted = order
      .slice(start, start + pool)
      .sort((a, b) => examples[a]!.inputIds.length - examples[b]!.inputIds.length);
    for (let k = 0; k < sorted.length; k += batchSize) batches.push(sorted.slice(k, k + batchSize));
  }
  return permutation(batches.length, random).map((i) => batches[i]!);
}

/** Supervised fine-tuning on demonstrations: length-bucketed shuffled minibatches, `epochs` passes. */
export async function runSft(
  policy: PolicyBackend,
  examples: readonly SftExample[],
  settings: { epochs: number; batchSize: number },
  options: {
    random: Random;
    signal?: AbortSignal;
    onEpoch?: (epoch: number, loss: number) => void;
    /** Each epoch's demonstrations renamed (`freshNames`: copying pays, memorising names does not). */
    rename?: FreshNames;
  },
): Promise<SftSummary> {
  if (!(Number.isInteger(settings.epochs) && settings.epochs > 0))
    throw new InvalidArgumentError({
      argument: 'epochs',
      message: `must be a positive integer, got ${String(settings.epochs)}`,
    });
  if (!(Number.isInteger(settings.batchSize) && settings.batchSize > 0))
    throw new InvalidArgumentError({
      argument: 'batchSize',
      message: `must be a positive integer, got ${String(settings.batchSize)}`,
    });
  if (examples.length === 0)
    throw new InvalidArgumentError({ argument: 'examples', message: 'needs at least one demonstration' });
  const summary: SftSummary = { epochLoss: [], updates: 0, skipped: 0 };
  for (let epoch = 0; epoch < settings.epochs; epoch++) {
    const rename = options.rename;
    const epochExamples = rename ? examples.map((e) => rename.apply(e, options.random)) : examples;
    const batches = lengthBucketedBatches(epochExamples, settings.batchSize, options.random);
    let weighted = 0;
    let tokens = 0;
    for (const indices of batches) {
      if (options.signal?.aborted) throw new AbortedError({ what: 'runSft', cause: options.signal.reason });
      const mini = indices.map((i) => epochExamples[i]!);
      const batch = { inputIds: mini.map((e) => e.inputIds), positions: mini.map((e) => e.positions) };
      const result = await policy.update(
        batch,
        sftLossFunction(batch),
        options.signal ? { signal: options.signal } : {},
      );
      const count = batch.positions.reduce((n, row) => n + row.length, 0);
      weighted += result.value * count;
      tokens += count;
      summary.updates++;
      if (!result.applied) summary.skipped++;
    }
    const loss = weighted / tokens;
    summary.epochLoss.push(loss);
    options.onEpoch?.(epoch, loss);
  }
  return summary;
}
