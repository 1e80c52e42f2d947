import type { CallOptions, SetupCheck } from './common';
import type { PageImage, TokenStep, Tokenizer } from './types';

/** How one turn is sampled: where it stops, how long it may be, temperature and top-p. */
export interface GenerateTurnOptions extends CallOptions {
  /** Generation of a rollout stops right after it emits one of these strings (closing action tags). */
  stopAfter: readonly string[];
  /** New tokens allowed: one number for all, or one per listed rollout (aligned with `rolloutIds`). */
  maxTokens: number | readonly number[];
  temperature: number;
  topP: number;
}

/** One rollout's new turn: its tokens and why generation stopped. */
export interface TurnOutput {
  rolloutId: number;
  /**
   * New policy tokens with their absolute positions and log-probs: log softmax(logits / temperature)
   * of the token, before any top-p truncation (the convention of vLLM's processed log-probs), so
   * that `logProbs` with the same temperature gives the same numbers.
   */
  steps: TokenStep[];
  finishReason: 'stop' | 'length' | 'eos';
}

/** What comes with appended observation tokens. */
export interface AppendOptions extends CallOptions {
  images?: readonly PageImage[];
}

/**
 * A batch of rollouts decoding together; the key/value cache survives across turns.
 * Rollout ids are 0..size-1 in the order of the prompts given to `begin`.
 */
export interface RolloutSession {
  readonly size: number;
  /** Generates the next turn of each listed rollout. */
  generateTurn(rolloutIds: readonly number[], options: GenerateTurnOptions): Promise<TurnOutput[]>;
  /**
   * Appends observation tokens (not policy output: loss mask 0) to one rollout. A `text+image`
   * policy also gets the observation's images (the page or crop shown); a text policy gets none.
   */
  append(rolloutId: number, tokenIds: readonly number[], options?: AppendOptions): Promise<void>;
  /** Frees the session's key/value cache; the session cannot be used after. */
  end(): Promise<void>;
}

/** Sequences to score: each full token sequence and the positions whose log-prob is wanted. */
export interface LogProbBatch {
  inputIds: number[][];
  /** Positions (indices into inputIds[i]) of the tokens to score; position 0 cannot be scored. */
  positions: number[][];
  /**
   * The sampling temperature the log-probs are taken at (log softmax(logits / temperature)), so
   * that they compare with the log-probs recorded at generation. Default 1; 0 (greedy) counts as 1.
   */
  temperature?: number;
}

/** The core's loss: value and d value / d logp for each requested position (same shape). */
export type LossFunction = ((newLogProbs: number[][]) => {
  value: number;
  gradNewLogProbs: number[][];
  metrics?: Record<string, number>;
}) & {
  /**
   * Set when the loss is linear in the log-probs (supervised fine-tuning's negative
   * log-likelihood): its d value / d logp, the same whatever the log-probs are. An engine may then
   * run each chunk's forward and backward in one pass, fed this gradient before the forward, instead
   * of every forward before the loss; the gradient the loss then returns must equal it.
   */
  readonly constantGradient?: number[][];
  /**
   * The log-probs the loss expects the policy to give (the rollout's, on an update that comes
   * before any other of the step: the policy that sampled the tokens is the one trained). An
   * engine may then run each chunk's forward and backward in one pass fed the loss's gradient at
   * these, ask the loss again at the log-probs the forward gave, and run the difference's
   * backward too where the two gradients differ by more than a relative `1e-4` (engines/two-pass.ts):
   * the gradient is the loss's at the new log-probs (within that tolerance), in about the time of
   * supervised fine-tuning's one pass instead of two.
   */
  readonly anticipatedLogProbs?: number[][];
};

/** Options of one `update`. */
export interface UpdateOptions extends CallOptions {
  /**
   * Entropy bonus: the backend adds `-entropyCoef * mean entropy` over the scored positions to the
   * objective (the entropy of the whole next-token distribution is not a function of logp_t alone,
   * so it cannot come through `lossFn`). Default 0.
   */
  entropyCoef?: number;
}

/** What one `update` did: the loss value, the gradient norm, and whether the step was applied. */
export interface UpdateResult {
  value: number;
  /** Gradient norm before clipping; NaN/Infinity means the step was skipped. */
  gradNorm: number;
  applied: boolean;
  skippedReason?: string;
  metrics?: Record<string, number>;
}

/** A backend's state as named blobs, so that any Store can persist it. */
export interface PolicyCheckpoint {
  format: string;
  metadata: Record<string, unknown>;
  blobs: Record<string, Uint8Array>;
  /**
   * Where a checkpoint read from storage came from (files, or a store's locations), for the errors
   * of a refused load to name; not saved.
   */
  source?: { state: string; blobs: Readonly<Record<string, string>> };
}

/**
 * How a chat model wants its text: the Searcher's prompt and each observation wrapped in the
 * model's own chat template (the prompt a user message with the assistant's turn opened; an
 * observation closing that turn, a user message, the next assistant turn opened).
 */
export interface ChatFormat {
  /** The Searcher's prompt as the model's first user message, with the assistant's turn opened. */
  prompt(text: string): string;
  /**
   * An observation: the assistant's turn closed, the text as a user message, the next assistant turn opened.
   */
  observation(text: string): string;
}

/**
 * What a policy says about itself, for a run's log and report (`PolicyBackend.describe`): its
 * size, where it computes, and the tokens it added.
 */
export interface PolicyDescription {
  /** Scalars in the model's weights; absent where the backend does not count them (an exported graph). */
  parameterCount?: number;
  /** Of those, the scalars `update` changes (under LoRA the adapter's); absent where it does not train. */
  trainableParameterCount?: number;
  /**
   * Where the model computes: the tfjs backend (`tensorflow-gpu`, `tensorflow`, `wasm`, `cpu`) or
   * ONNX Runtime's execution provider (`onnxruntime-cpu`, `onnxruntime-cuda`).
   */
  backend: string;
  /** The protocol tags added as new tokens to a pretrained model's tokenizer, in id order; empty when none. */
  addedTags: readonly string[];
}

/** The optimizer settings a run's phase starts a new optimizer with (`PolicyBackend.resetOptimizer`). */
export interface OptimizerResetSettings {
  learningRate: number;
  /** Linear warm-up of the learning rate over this many optimizer steps. */
  warmupSteps: number;
}

/**
 * The Searcher policy: rollout sessions, log-probs, updates and checkpoints. The tfjs, ONNX,
 * Llama, scripted and OpenAI-compatible policies implement it (some for rollouts only).
 */
export interface PolicyBackend extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  /** How observations are rendered for this policy. */
  readonly modalities: 'text' | 'text+image';
  readonly tokenizer: Tokenizer;
  /** Whether `update` changes the policy (a scripted or remote policy may not). */
  readonly trainable: boolean;
  /**
   * The longest sequence (prompt, turns, observations) the model can take, if it has a limit: an
   * episode's context follows it, and a configuration that asks for more is refused.
   */
  readonly contextLength?: number;
  /** A chat model's wrapping of prompts and observations; absent: the text goes in as it is. */
  readonly chatFormat?: ChatFormat;
  /**
   * Opens a rollout session with one rollout per prompt (token ids), their key/value caches kept across
   * turns.
   */
  begin(promptTokenIds: readonly (readonly number[])[], options?: CallOptions): Promise<RolloutSession>;
  /** The log-probs of the tokens at `batch.positions`, from a full forward at `batch.temperature`. */
  logProbs(batch: LogProbBatch, options?: CallOptions): Promise<number[][]>;
  /** One optimisation step that back-propagates sum_t g_t * logp_t with g from `lossFn`. */
  update(batch: LogProbBatch, lossFn: LossFunction, options?: UpdateOptions): Promise<UpdateResult>;
  /** The policy's state (weights, optimizer, settings) as named blobs any Store can keep. */
  save(options?: CallOptions): Promise<PolicyCheckpoint>;
  /**
   * Restores a state `save` made; a checkpoint of another model or tokenizer is refused and changes nothing.
   */
  load(checkpoint: PolicyCheckpoint, options?: CallOptions): Promise<void>;
  /** Its size, backend and added tokens, where the policy knows them (a scripted policy has none). */
  describe?(): PolicyDescription;
  /**
   * Starts a new optimizer (moments cleared, step 0) with these settings: a run's phase and a
   * curation round's SFT each start one. Absent on a policy without an optimizer (scripted, ONNX
   * reference, a remote server).
   */
  resetOptimizer?(settings: OptimizerResetSettings): void;
}
