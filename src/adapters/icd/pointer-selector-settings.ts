import { z } from 'zod';
import type { Random } from '../../core/random';
import type { PolicyCheckpoint } from '../../ports/policy-backend';

// The pointer selector's settings, batch and interface. No tfjs import here: searcher-rl/icd names
// these without loading @tensorflow/tfjs, which only createPointerSelector (pointer-selector.ts) needs.

/** The `format` of a pointer selector's checkpoint; `load` refuses any other. */
export const POINTER_SELECTOR_FORMAT = 'searcher-rl.pointer-selector.v1';

/**
 * The pointer selector's settings as a zod schema: sizes, shots, temperature, optimizer and seed.
 */
export const pointerSelectorSettingsSchema = z
  .object({
    /** d: the embedding size. */
    inputDimensions: z.number().int().positive(),
    /** h: the projection size. */
    hiddenDimensions: z.number().int().positive().default(32),
    /** Shots chosen per query. */
    shots: z.number().int().positive().default(2),
    /** τ in q·c / τ (docs/method.md#pointer-selector: 0.5 or 0.1). */
    temperature: z.number().positive().default(0.1),
    seed: z.number().int().default(0),
    learningRate: z.number().positive().default(0.01),
    weightDecay: z.number().min(0).default(0),
    maxGradNorm: z.number().positive().nullable().default(1),
    backend: z.enum(['auto', 'tensorflow-gpu', 'tensorflow', 'wasm', 'cpu']).default('auto'),
  })
  .strict();

/** Settings of `createPointerSelector` (`pointerSelectorSettingsSchema`). */
export type PointerSelectorSettings = z.input<typeof pointerSelectorSettingsSchema>;

/** A batch of queries: B query vectors (B x d) and their pools (B x K x d), row-major. */
export interface SelectorBatch {
  queries: Float32Array;
  candidates: Float32Array;
  size: number;
  poolSize: number;
}

/**
 * The pointer selector (docs/method.md#pointer-selector): picks shots from a query's pool, scores
 * its choices, and trains on them.
 */
export interface PointerSelector {
  readonly settings: Readonly<z.output<typeof pointerSelectorSettingsSchema>>;
  readonly backend: string;
  readonly parameterCount: number;
  /** Per query, the chosen local indices: sampled (`random`) or greedy (no `random`). */
  select(batch: SelectorBatch, random?: Random): { actions: number[][]; logProbs: number[][] };
  /** Per query, per shot: log p(action) with the earlier actions masked and fed back. */
  logProbs(batch: SelectorBatch, actions: readonly (readonly number[])[]): number[][];
  /** One AdamW step on `sum_i,s weights[i][s] * logp[i][s]` (weights = d loss / d logp). */
  step(
    batch: SelectorBatch,
    actions: readonly (readonly number[])[],
    weights: readonly (readonly number[])[],
  ): { gradNorm: number; applied: boolean };
  /** The weights, the optimizer state and the settings as a checkpoint. */
  save(): PolicyCheckpoint;
  /** Restores a checkpoint `save` made. */
  load(checkpoint: PolicyCheckpoint): void;
  /** Frees the selector's tensors; it cannot be used after. */
  dispose(): void;
}
