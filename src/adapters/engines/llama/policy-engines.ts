import type { RolloutEngine, TrainingEngine } from '../engine';
import { twoPassGradients } from '../two-pass';
import type { DropoutMasks, LlamaEngine, LlamaRow, TrainingForward, WeightMap } from './engine';

// The Llama engine as the two engines a policy holds (engine.ts in this folder's parent): its decode
// as the rollout engine, its training forward and backward run by the one two-pass update loop.

/** The Llama engine's decode as a rollout engine; disposing it releases the engine's sessions. */
export function llamaRolloutEngine(engine: LlamaEngine): RolloutEngine<LlamaRow> {
  return {
    forward: (rows, temperature) => engine.decode(rows, temperature),
    dispose: () => engine.dispose(),
  };
}

/** What a Llama training engine needs besides the engine. */
export interface LlamaTrainingOptions {
  /** Activation bytes an update keeps between its forwards and their backwards. */
  keptActivationBytes: number;
  /** The LoRA dropout masks of a training forward over `tokens` (rows x padded length), if any. */
  dropout(tokens: number): DropoutMasks | undefined;
  /**
   * Whether a training forward drops nothing (no LoRA dropout): it then scores the tokens as the
   * rollouts did, which an anticipated gradient needs to be right the first time.
   */
  deterministic: boolean;
}

/**
 * The Llama engine's gradients by trainable weight name: each row trimmed after its last scored
 * position, every chunk's forward (with fresh dropout masks) before the loss, one backward each.
 */
export function createLlamaTrainingEngine(
  engine: LlamaEngine,
  options: LlamaTrainingOptions,
): TrainingEngine<WeightMap> {
  return {
    async computeGradients(batch, lossFn, plan) {
      const rowsOf = (chunk: readonly number[]) =>
        chunk.map((i) => batch.inputIds[i]!.slice(0, Math.max(...batch.positions[i]!) + 1));
      const tokensOf = (rows: readonly number[][]) => rows.length * Math.max(...rows.map((r) => r.length));
      /**
       * A chunk's masks, drawn at its first run: a chunk run again in this update (an anticipated
       * gradient's correction adds the difference's backward) must drop what its first run dropped.
       */
      const drawn = new Map<readonly number[], ReturnType<LlamaTrainingOptions['dropout']>>();
      /** A chunk's rows and positions, and its run's entropy flag and fresh dropout masks (one draw a chunk). */
      const inputsOf = (chunk: readonly number[]) => {
        const rows = rowsOf(chunk);
        if (!drawn.has(chunk)) drawn.set(chunk, options.dropout(tokensOf(rows)));
        const masks = drawn.get(chunk);
        return {
          rows,
          positions: chunk.map((i) => batch.positions[i]!),
          run: { entropy: plan.entropyCoef !== 0, ...(masks && { dropout: masks }) },
        };
      };
      const gradients: WeightMap = new Map();
      const outcome = await twoPassGradients<TrainingForward>(
        {
          tokens: (chunk) => tokensOf(rowsOf(chunk)),
          deterministic: options.deterministic,
          forward(chunk, keep) {
            const { rows, positions, run } = inputsOf(chunk);
            return engine.trainingForward(rows, positions, plan.temperature, { ...run, keep });
          },
          backward: (_chunk, forward, upstream, entropyWeight) =>
            engine.gradients(forward, upstream, entropyWeight, gradients),
          fused(chunk, upstream, entropyWeight) {
            const { rows, positions, run } = inputsOf(chunk);
            return engine.trainingStep(
              rows,
              positions,
              plan.temperature,
              run,
              upstream,
              entropyWeight,
              gradients,
            );
          },
        },
        batch,
        lossFn,
        plan,
        { keptActivationBytes: options.keptActivationBytes, provider: 'llama' },
      );
      return { grads: gradients, ...outcome };
    },
    // The sessions are the rollout engine's too: the policy releases them once.
    dispose: async () => {},
  };
}
