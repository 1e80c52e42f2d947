import type * as Ort from 'onnxruntime-node';
import type { KvCacheRow, KvCacheShape } from '../../../rollout-engine/kv-cache';
import type { ScheduledRow } from '../../../rollout-engine/rollout-scheduler';
import type { OnnxSessionOptions } from '../onnx-graph/index';
import type { LlamaConfig } from './config';
import type { DropoutMasks } from './engine-feeds';
import type { LoraShape } from './llama-graph';

// What the Llama engine (engine.ts) is to the policy: its rows, options and runs.

/** One rollout: its tokens and its key/value cache. */
export interface LlamaRow extends ScheduledRow, KvCacheRow {
  released?: boolean;
}

/** Float32 arrays by Hugging Face name. */
export type WeightMap = Map<string, Float32Array>;

export interface LlamaEngineOptions {
  config: LlamaConfig;
  base: WeightMap;
  /** When present, the adapter's weights (updated in place by training). */
  lora?: { shape: LoraShape; weights: WeightMap };
  /** Full fine-tuning: the base weights are inputs (they change), not constants. */
  trainBase: boolean;
  session: OnnxSessionOptions;
  /** Rows per decode forward. */
  maxBatchRows: number;
  /** Tokens (rows x padded length) per score or train run. */
  maxChunkTokens: number;
  /**
   * Which training sessions keep an ONNX Runtime memory arena between runs: `'one-run'` (the
   * default) the one-run session (SFT's steps and an RL step's on-policy update), `true` the
   * two-run sessions as well, `false` none.
   */
  trainingMemoryArena?: TrainingMemoryArena;
}

/** See `LlamaEngineOptions.trainingMemoryArena`. */
export type TrainingMemoryArena = boolean | 'one-run';

export interface ScoredChunk {
  tokenLogProbs: Float32Array;
  entropySum: number;
}

export interface LlamaEngine {
  readonly kvShape: KvCacheShape;
  /** Feeds every row's uncached tokens; log-probs at each row's last token. */
  decode(rows: LlamaRow[], temperature: number): Promise<Float32Array[]>;
  /** Row chunks for `score` and `gradients` (each under maxChunkTokens). */
  chunks(lengths: readonly number[]): number[][];
  score(
    sequences: readonly (readonly number[])[],
    positions: readonly (readonly number[])[],
    temperature: number,
    dropout?: DropoutMasks,
    /** Score the base model: the LoRA adapter's B matrices fed as zeros (the adapter then adds nothing). */
    withoutAdapter?: boolean,
  ): Promise<ScoredChunk>;
  /**
   * The training forward of one chunk: its log-probs and entropy sum, and the activations its
   * backward reads, kept (while `keep` says so) so that `gradients` runs the backward alone.
   */
  trainingForward(
    sequences: readonly (readonly number[])[],
    positions: readonly (readonly number[])[],
    temperature: number,
    options: { entropy: boolean; dropout?: DropoutMasks; keep: boolean },
  ): Promise<TrainingForward>;
  /**
   * Gradients of sum upstream * logp - entropyWeight * entropy by each trainable weight (added
   * into `into`) at the weights `forward` saw; runs the forward again first when its activations
   * were not kept. The activations are dropped after.
   */
  gradients(
    forward: TrainingForward,
    upstream: Float32Array,
    entropyWeight: number,
    into: WeightMap,
  ): Promise<void>;
  /**
   * The training forward and backward of one chunk in one run, fed `upstream` (a loss whose
   * gradient is known before the log-probs: supervised fine-tuning): the gradients added into
   * `into`, the chunk's log-probs and entropy sum returned. Nothing is handed between two runs.
   */
  trainingStep(
    sequences: readonly (readonly number[])[],
    positions: readonly (readonly number[])[],
    temperature: number,
    options: { entropy: boolean; dropout?: DropoutMasks },
    upstream: Float32Array,
    entropyWeight: number,
    into: WeightMap,
  ): Promise<ScoredChunk>;
  /** The trainable weights' names. */
  readonly trainableNames: readonly string[];
  /** Drops the sessions whose constants are the base weights (after a full-model load). */
  dispose(): Promise<void>;
}

/** One chunk's training forward (see LlamaEngine.trainingForward). */
export interface TrainingForward extends ScoredChunk {
  readonly entropy: boolean;
  readonly feeds: Record<string, Ort.Tensor>;
  readonly ids: readonly number[];
  /** The activations the backward reads; null when not kept or dropped. */
  kept: Record<string, Ort.Tensor> | null;
  /** Their bytes (0 when not kept). */
  readonly keptBytes: number;
}
