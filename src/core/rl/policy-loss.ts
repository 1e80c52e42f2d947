import { InvalidArgumentError } from '../errors';
import { aggregationWeights, assertAggregation, type LossAggregation } from './aggregation';
import {
  assertFiniteMasked,
  assertLogProbInputs,
  assertMatrix,
  assertNonNegative,
  assertSameShape,
} from './validate';

/**
 * The options of `policyLoss` that belong to one loss: set for another, they are an
 * InvalidArgumentError naming them.
 */
export interface PolicyLossOptions {
  /** GSPO only: the sequence log-ratio is clamped from above at this value (verl uses 10). */
  maxLogRatio?: number;
  /**
   * PPO-clip only: dual-clip (Ye et al. 2020, verl's `clip_ratio_c`, 3 there). With a negative
   * advantage the token loss is at most -A * clipRatioC. `null` or absent: off. Must be > 1.
   */
  clipRatioC?: number | null;
  /** PPO-clip only: the token log-ratio is clamped to ±this before exp (verl: 20). `null` or absent: off. */
  logRatioClamp?: number | null;
}

/** The fields of a run's loss settings (`rl.loss`) that belong to one loss. */
export interface PolicyLossOwnSettings {
  /** PPO-clip dual-clip (verl's `clip_ratio_c`); off unless true. */
  dualClip?: boolean;
  /** The dual-clip bound, > 1 (default DEFAULT_CLIP_RATIO_C, verl's 3); read only with `dualClip`. */
  clipRatioC?: number;
  /** PPO-clip: clamp each token's log-ratio to ±this before exp (verl: 20); `null` or absent: off. */
  logRatioClamp?: number | null;
}

/** verl's default dual-clip bound (`clip_ratio_c`). */
export const DEFAULT_CLIP_RATIO_C = 3;

/** The sequences a loss's importance ratios are taken over: both log-probs and the mask. */
export interface ImportanceRatioInput {
  oldLogProbs: number[][];
  newLogProbs: number[][];
  mask: number[][];
}

/** Every masked-in token's importance ratio and its derivative by the token's new log-prob. */
export interface ImportanceRatios {
  /** ratio[i][t]; 0 off the mask. */
  ratio: number[][];
  /** d ratio[i][t] / d newLogProbs[i][t]; 0 off the mask and where a clamp holds (no gradient). */
  derivative: number[][];
  /** A sequence-level loss's ratio of each sequence (GSPO's s_i). */
  sequenceRatios?: number[];
}

/**
 * One policy loss of `POLICY_LOSSES`: how it takes the importance ratio, and which options and
 * settings are its own. The clipped surrogate around the ratio, the dual clip and the
 * aggregation are the same for every loss (`policyLoss`).
 */
export interface PolicyLossDefinition {
  /** What the loss is, in one line, with its source. */
  readonly summary: string;
  /** The `policyLoss` options it takes; another loss's options set with it are refused. */
  readonly options: readonly (keyof PolicyLossOptions)[];
  /** The `rl.loss` settings it takes; another loss's settings set with it are refused. */
  readonly ownSettings: readonly (keyof PolicyLossOwnSettings)[];
  /** Its `policyLoss` options from a run's loss settings. */
  inputOptions(settings: PolicyLossOwnSettings): PolicyLossOptions;
  /** The ratios, with the options resolved (defaults applied, validated). */
  importanceRatios(
    input: ImportanceRatioInput,
    options: { maxLogRatio: number; logRatioClamp: number | null },
  ): ImportanceRatios;
}

/** Per masked-in token, a [value, derivative] pair; 0 and 0 off the mask. */
function perToken(
  mask: number[][],
  at: (i: number, t: number) => readonly [number, number],
): ImportanceRatios {
  const ratio = mask.map((row) => row.map(() => 0));
  const derivative = mask.map((row) => row.map(() => 0));
  mask.forEach((row, i) =>
    row.forEach((m, t) => {
      if (m === 0) return;
      [ratio[i]![t], derivative[i]![t]] = at(i, t);
    }),
  );
  return { ratio, derivative };
}

/**
 * The policy losses by the name a configuration gives (`rl.loss.kind`): PPO-clip (token ratios)
 * and GSPO (sequence ratios). Adding a loss is one entry here; the config's choices
 * (`POLICY_LOSS_KINDS`), the checks of its own settings and the update follow from it.
 */
export const POLICY_LOSSES = Object.freeze({
  ppo_clip: {
    summary: "PPO's clipped surrogate on per-token ratios (verl's compute_policy_loss_vanilla)",
    options: ['clipRatioC', 'logRatioClamp'],
    ownSettings: ['dualClip', 'logRatioClamp'],
    inputOptions: (settings) => ({
      clipRatioC: settings.dualClip ? (settings.clipRatioC ?? DEFAULT_CLIP_RATIO_C) : null,
      logRatioClamp: settings.logRatioClamp ?? null,
    }),
    importanceRatios: ({ oldLogProbs, newLogProbs, mask }, { logRatioClamp }) =>
      perToken(mask, (i, t) => {
        const logRatio = newLogProbs[i]![t]! - oldLogProbs[i]![t]!;
        // verl clamps the token log-ratio to ±20 before exp; a clamped ratio has no gradient.
        const clamped =
          logRatioClamp === null ? logRatio : Math.min(logRatioClamp, Math.max(-logRatioClamp, logRatio));
        const ratio = Math.exp(clamped);
        return [ratio, clamped === logRatio ? ratio : 0];
      }),
  },
  gspo: {
    summary:
      "GSPO's clipped surrogate on one ratio per sequence, exp(mean masked (new - old)) (verl's compute_policy_loss_gspo)",
    options: ['maxLogRatio'],
    ownSettings: [],
    inputOptions: () => ({}),
    importanceRatios: ({ oldLogProbs, newLogProbs, mask }, { maxLogRatio }) => {
      const logRatios = mask.map((row, i) => {
        let sum = 0;
        let count = 0;
        row.forEach((m, t) => {
          if (m === 0) return;
          sum += m * (newLogProbs[i]![t]! - oldLogProbs[i]![t]!);
          count += m;
        });
        return count > 0 ? sum / count : 0;
      });
      // Every token of sequence i uses exp(new_t - sg(new_t) + sg(log s_i)): value s_i, derivative
      // s_i. verl clamps the log of the sequence ratio from above; a clamped ratio has no gradient.
      const sequenceRatios = logRatios.map((lr) => Math.exp(Math.min(lr, maxLogRatio)));
      const ratios = perToken(mask, (i) => [
        sequenceRatios[i]!,
        logRatios[i]! > maxLogRatio ? 0 : sequenceRatios[i]!,
      ]);
      return { ...ratios, sequenceRatios };
    },
  },
} satisfies Record<string, PolicyLossDefinition>);

/** A policy loss's name: a key of `POLICY_LOSSES` (`ppo_clip`, `gspo`). */
export type PolicyLossKind = keyof typeof POLICY_LOSSES;

/** The names of `POLICY_LOSSES`, in order, as a non-empty tuple (a config's enum). */
export const POLICY_LOSS_KINDS = Object.freeze(Object.keys(POLICY_LOSSES)) as readonly [
  PolicyLossKind,
  ...PolicyLossKind[],
];

/** The loss of a kind, or an InvalidArgumentError on `argument` listing the kinds. */
export function policyLossOf(kind: PolicyLossKind, argument = 'kind'): PolicyLossDefinition {
  if (typeof kind !== 'string' || !Object.hasOwn(POLICY_LOSSES, kind))
    throw new InvalidArgumentError({
      argument,
      message: `must be one of ${POLICY_LOSS_KINDS.map((k) => `'${k}'`).join(', ')}, got ${String(kind)}`,
    });
  return POLICY_LOSSES[kind];
}

const isSet = (value: unknown) => value !== undefined && value !== null && value !== false;

const ownersOf = (field: string, list: 'options' | 'ownSettings') =>
  POLICY_LOSS_KINDS.filter((k) => (POLICY_LOSSES[k][list] as readonly string[]).includes(field))
    .map((k) => `'${k}'`)
    .join(' or ');

/**
 * The loss settings (`rl.loss`) set for a kind that does not take them, each with what to do:
 * empty when there are none. The config's validation and the update's loss both ask it.
 */
export function misplacedLossSettings(
  settings: { kind: PolicyLossKind } & PolicyLossOwnSettings,
): Array<{ field: keyof PolicyLossOwnSettings; message: string }> {
  const own = policyLossOf(settings.kind, 'kind').ownSettings;
  const fields = new Set(POLICY_LOSS_KINDS.flatMap((k) => POLICY_LOSSES[k].ownSettings));
  return [...fields]
    .filter((field) => !own.includes(field) && isSet(settings[field]))
    .map((field) => ({
      field,
      message: `applies to kind ${ownersOf(field, 'ownSettings')} only, not '${settings.kind}'`,
    }));
}

/**
 * `policyLoss`'s input: both log-probs, the mask, the advantages, the clip range, the
 * aggregation, and the options of the chosen loss.
 */
export interface PolicyLossInput extends PolicyLossOptions {
  kind: PolicyLossKind;
  /** Per-token log-probs under the policy that generated the tokens (batch x tokens). */
  oldLogProbs: number[][];
  /** Per-token log-probs under the policy being updated. */
  newLogProbs: number[][];
  /** 1 on policy-generated tokens, 0 on prompt, observation and answer tokens (state masking). */
  mask: number[][];
  /** One advantage per sequence, or one per token. */
  advantages: number[] | number[][];
  /** ratio is clipped to [1 - clipLow, 1 + clipHigh]. */
  clipLow: number;
  clipHigh: number;
  aggregation: LossAggregation;
}

/** The policy loss, its gradient by the new log-probs, and the clip figures. */
export interface PolicyLossResult {
  value: number;
  /** d value / d newLogProbs[i][t], zero off the mask. Feed it to a backend as `sum g_t * logp_t`. */
  gradNewLogProbs: number[][];
  /** Share of masked-in tokens (mask-weighted) whose clipped branch was the active one. */
  clipFraction: number;
  /** GSPO only: the sequence importance ratio exp(mean masked (new - old)) of each sequence. */
  sequenceRatios?: number[];
  /** With dual-clip: share of masked-in tokens whose negative-advantage loss the dual clip bounded (verl's pg_clipfrac_lower). */
  clipFractionLower?: number;
}

/**
 * The policy losses of `POLICY_LOSSES` (PPO-clip, GSPO) on plain arrays, with their exact
 * gradient with respect to the new per-token log-probs. Definitions follow verl
 * (`compute_policy_loss_vanilla`, `compute_policy_loss_gspo`); the reference values in
 * `__fixtures__/policy_losses.json` were computed with PyTorch autograd in float64.
 *
 * Per token, loss = max(-A * ratio, -A * clip(ratio, 1 - clipLow, 1 + clipHigh)), the ratio and
 * its derivative from the kind's entry. The clipped branch has zero gradient; where both branches
 * are equal the unclipped one carries it. PPO: ratio_t = exp(new_t - old_t). GSPO: every token
 * of sequence i uses exp(new_t - sg(new_t) + sg(log s_i)) whose value is s_i and whose
 * derivative in new_t is s_i. An option of another kind than `kind` is an InvalidArgumentError.
 */
export function policyLoss(input: PolicyLossInput): PolicyLossResult {
  const { kind, oldLogProbs, newLogProbs, mask, clipLow, clipHigh, aggregation } = input;
  const loss = policyLossOf(kind);
  assertLogProbInputs(oldLogProbs, newLogProbs, mask);
  assertNonNegative('clipLow', clipLow);
  assertNonNegative('clipHigh', clipHigh);
  assertAggregation(aggregation);
  const maxLogRatio = input.maxLogRatio ?? 10;
  if (!(maxLogRatio > 0))
    throw new InvalidArgumentError({ argument: 'maxLogRatio', message: `must be > 0, got ${maxLogRatio}` });
  const clipRatioC = input.clipRatioC ?? null;
  const logRatioClamp = input.logRatioClamp ?? null;
  if (clipRatioC !== null && !(Number.isFinite(clipRatioC) && clipRatioC > 1))
    throw new InvalidArgumentError({
      argument: 'clipRatioC',
      message: `must be a finite number > 1, got ${clipRatioC}`,
    });
  if (logRatioClamp !== null && !(logRatioClamp > 0))
    throw new InvalidArgumentError({
      argument: 'logRatioClamp',
      message: `must be > 0, got ${logRatioClamp}`,
    });
  for (const option of ['maxLogRatio', 'clipRatioC', 'logRatioClamp'] as const) {
    if (isSet(input[option]) && !loss.options.includes(option))
      throw new InvalidArgumentError({
        argument: option,
        message: `applies to kind ${ownersOf(option, 'options')} only, not '${kind}'`,
      });
  }
  const advantageAt = advantageLookup(input.advantages, mask);

  const weights = aggregationWeights(mask, aggregation);
  const lower = 1 - clipLow;
  const upper = 1 + clipHigh;
  const ratios = loss.importanceRatios({ oldLogProbs, newLogProbs, mask }, { maxLogRatio, logRatioClamp });

  let value = 0;
  let clipped = 0;
  let clippedLower = 0;
  let maskTotal = 0;
  const gradNewLogProbs = mask.map((row, i) =>
    row.map((m, t) => {
      if (m === 0) return 0;
      const advantage = advantageAt(i, t);
      const ratio = ratios.ratio[i]![t]!;
      const unclippedLoss = -advantage * ratio;
      const clippedLoss = -advantage * Math.min(Math.max(ratio, lower), upper);
      let tokenLoss = Math.max(unclippedLoss, clippedLoss);
      const weight = weights[i]![t]!;
      maskTotal += m;
      if (clippedLoss > unclippedLoss) clipped += m;
      // Dual-clip: a negative advantage's loss is bounded by -A * c (a constant: no gradient).
      if (clipRatioC !== null && advantage < 0 && tokenLoss > -advantage * clipRatioC) {
        tokenLoss = -advantage * clipRatioC;
        clippedLower += m;
        value += weight * tokenLoss;
        return 0;
      }
      value += weight * tokenLoss;
      if (clippedLoss > unclippedLoss) return 0;
      return weight * -advantage * ratios.derivative[i]![t]!;
    }),
  );
  const result: PolicyLossResult = {
    value,
    gradNewLogProbs,
    clipFraction: maskTotal > 0 ? clipped / maskTotal : 0,
  };
  if (clipRatioC !== null) result.clipFractionLower = maskTotal > 0 ? clippedLower / maskTotal : 0;
  if (ratios.sequenceRatios) result.sequenceRatios = ratios.sequenceRatios;
  return result;
}

function advantageLookup(
  advantages: number[] | number[][],
  mask: number[][],
): (i: number, t: number) => number {
  if (!Array.isArray(advantages))
    throw new InvalidArgumentError({
      argument: 'advantages',
      message: 'expected number[] (per sequence) or number[][] (per token)',
    });
  if (advantages.length !== mask.length) {
    throw new InvalidArgumentError({
      argument: 'advantages',
      message: `has ${advantages.length} entries but 'mask' has ${mask.length} sequences`,
    });
  }
  if (advantages.every((a) => typeof a === 'number')) {
    const perSequence = advantages as number[];
    perSequence.forEach((a, i) => {
      if (!Number.isFinite(a))
        throw new InvalidArgumentError({ argument: `advantages[${i}]`, message: `must be finite, got ${a}` });
    });
    return (i) => perSequence[i]!;
  }
  const perToken = advantages as number[][];
  assertMatrix('advantages', perToken);
  assertSameShape('mask', mask, 'advantages', perToken);
  assertFiniteMasked('advantages', perToken, mask);
  return (i, t) => perToken[i]![t]!;
}
