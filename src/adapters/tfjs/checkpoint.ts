import * as tf from '@tensorflow/tfjs';
import { InvalidArgumentError } from '../../core/errors';
import { createProtocolTokenizer, createVocabularyTokenizer } from '../../core/protocol/tokenizer';
import { PROTOCOL_TAG_STRINGS } from '../../core/protocol/tags';
import { hashString } from '../../core/random';
import type { PolicyCheckpoint } from '../../ports/policy-backend';
import type { Tokenizer } from '../../ports/types';
import { AdamW } from './adamw';
import {
  checkpointBlobs,
  MODEL_FILE,
  OPTIMIZER_FILE,
  readPackedV1,
  readTensors,
  tokenizerFilesOf,
} from './hf/checkpoint-files';
import { CHECKPOINT_FORMAT, CHECKPOINT_FORMAT_V1, parseOptimizerSettings } from './settings';
import { ensureReady, type PolicyContext } from './state';
import type { TransformerConfig } from '../engines/transformer/transformer';

/**
 * A hash of every token's text and the end-of-sequence id: a checkpoint only loads with the
 * tokenizer it was trained with (the vocabulary size alone would let a renamed token through).
 */
function tokenizerFingerprint(tokenizer: Tokenizer): string {
  const texts = Array.from({ length: tokenizer.vocabSize }, (_, id) => tokenizer.tokenText(id));
  return hashString([...texts, `eos ${tokenizer.eosTokenId}`].join('\u0000'))
    .toString(16)
    .padStart(8, '0');
}

function assign(values: readonly Float32Array[], targets: readonly tf.Variable[]): void {
  tf.tidy(() => {
    targets.forEach((t, i) => {
      t.assign(tf.tensor(values[i]!, t.shape));
    });
  });
}

const BYTE_ORDER = 'little-endian float32';

/** ` (in FILE)` where the checkpoint was read from a file. */
const from = (file: string | undefined) => (file ? ` (in ${file})` : '');

type SavedMetadata = {
  model?: Record<string, unknown>;
  tokenizer?: { vocabSize?: unknown; fingerprint?: unknown };
  optimizer?: { step?: unknown; settings?: unknown };
  sampling?: { seed?: unknown; sessionCounter?: unknown };
};

export interface Checkpoints {
  save(): Promise<PolicyCheckpoint>;
  load(checkpoint: PolicyCheckpoint): Promise<void>;
}

/** Weights, AdamW moments and sampling state, with what is needed to refuse a mismatched policy. */
export function createCheckpoints(context: PolicyContext): Checkpoints {
  const { tokenizer, modelConfig, state } = context;
  const model = state.model;
  const fingerprint = tokenizerFingerprint(tokenizer);
  let tokenizerFiles: ReturnType<typeof tokenizerFilesOf> | undefined;

  return {
    async save() {
      await ensureReady(context);
      const { optimizer } = state;
      return {
        format: CHECKPOINT_FORMAT,
        metadata: {
          model: modelConfig,
          tokenizer: {
            vocabSize: tokenizer.vocabSize,
            eosTokenId: tokenizer.eosTokenId,
            specials: [...PROTOCOL_TAG_STRINGS, '<eos>'].filter(
              (t) => tokenizer.specialTokenId(t) !== undefined,
            ),
            // A corpus vocabulary travels with the weights (tokenizerFromCheckpoint rebuilds it).
            ...(tokenizer.vocabulary && { vocabulary: [...tokenizer.vocabulary] }),
            fingerprint,
          },
          parameters: model.parameters.map((p) => ({ name: p.name, shape: p.variable.shape })),
          optimizer: { step: optimizer.step, settings: optimizer.settings },
          sampling: { seed: state.samplingSeed, sessionCounter: state.sessionCounter },
          byteOrder: BYTE_ORDER,
        },
        blobs: checkpointBlobs(
          modelConfig,
          tokenizer,
          (tokenizerFiles ??= tokenizerFilesOf(tokenizer, modelConfig.contextLength, context.tokenizerFiles)),
          model.parameters.map((p) => ({
            name: p.name,
            shape: p.variable.shape,
            values: p.variable.dataSync() as Float32Array,
          })),
          {
            first: optimizer.firstMoments.map((m) => m.dataSync() as Float32Array),
            second: optimizer.secondMoments.map((v) => v.dataSync() as Float32Array),
          },
        ),
      };
    },

    async load(checkpoint) {
      await ensureReady(context);
      // Everything is checked and decoded before anything changes: a refused checkpoint leaves the policy as it was.
      if (
        !checkpoint ||
        (checkpoint.format !== CHECKPOINT_FORMAT && checkpoint.format !== CHECKPOINT_FORMAT_V1)
      ) {
        throw new InvalidArgumentError({
          argument: 'checkpoint.format',
          message: `expected '${CHECKPOINT_FORMAT}' (or '${CHECKPOINT_FORMAT_V1}'), got '${String(checkpoint?.format)}'`,
        });
      }
      const meta = checkpoint.metadata as SavedMetadata;
      for (const key of Object.keys(modelConfig) as Array<keyof TransformerConfig>) {
        if (meta.model?.[key] !== modelConfig[key]) {
          throw new InvalidArgumentError({
            argument: `checkpoint.metadata.model.${key}`,
            message: `the checkpoint has ${String(meta.model?.[key])}, this policy ${modelConfig[key]}${from(checkpoint.source?.state)}; create the policy with the checkpoint's model settings`,
          });
        }
      }
      if (meta.tokenizer?.vocabSize !== tokenizer.vocabSize || meta.tokenizer?.fingerprint !== fingerprint) {
        throw new InvalidArgumentError({
          argument: 'checkpoint.metadata.tokenizer',
          message: `the checkpoint was trained with a different tokenizer (vocabulary, token texts or end-of-sequence id differ)${from(checkpoint.source?.state)}`,
        });
      }
      const step = meta.optimizer?.step;
      const counter = meta.sampling?.sessionCounter;
      const seed = meta.sampling?.seed;
      if (!(Number.isInteger(step) && (step as number) >= 0))
        throw new InvalidArgumentError({
          argument: 'checkpoint.metadata.optimizer.step',
          message: `must be a non-negative integer, got ${String(step)}${from(checkpoint.source?.state)}`,
        });
      if (!(Number.isInteger(counter) && (counter as number) >= 0))
        throw new InvalidArgumentError({
          argument: 'checkpoint.metadata.sampling.sessionCounter',
          message: `must be a non-negative integer, got ${String(counter)}${from(checkpoint.source?.state)}`,
        });
      if (!Number.isInteger(seed))
        throw new InvalidArgumentError({
          argument: 'checkpoint.metadata.sampling.seed',
          message: `must be an integer, got ${String(seed)}${from(checkpoint.source?.state)}`,
        });
      const savedSettings = parseOptimizerSettings(
        meta.optimizer?.settings,
        'checkpoint.metadata.optimizer.settings',
      );
      const byteOrder = (checkpoint.metadata as { byteOrder?: unknown }).byteOrder;
      if (byteOrder !== undefined && byteOrder !== BYTE_ORDER)
        throw new InvalidArgumentError({
          argument: 'checkpoint.metadata.byteOrder',
          message: `expected '${BYTE_ORDER}', got ${JSON.stringify(byteOrder)}${from(checkpoint.source?.state)}`,
        });
      const parameters = model.parameters.map((p) => ({ name: p.name, shape: p.variable.shape }));
      const [weights, firstMoments, secondMoments] =
        checkpoint.format === CHECKPOINT_FORMAT
          ? [
              readTensors(checkpoint, MODEL_FILE, parameters, 'weights'),
              readTensors(checkpoint, OPTIMIZER_FILE, parameters, 'moments', 'exp_avg.'),
              readTensors(checkpoint, OPTIMIZER_FILE, parameters, 'second moments', 'exp_avg_sq.'),
            ]
          : [
              readPackedV1(checkpoint, 'weights.f32', parameters, 'weights'),
              readPackedV1(checkpoint, 'adam-m.f32', parameters, 'moments'),
              readPackedV1(checkpoint, 'adam-v.f32', parameters, 'second moments'),
            ];
      // The optimizer continues as it was saved, settings included (a run may reset it after SFT).
      if (JSON.stringify(savedSettings) !== JSON.stringify(state.optimizer.settings)) {
        state.optimizer.dispose();
        state.optimizer = new AdamW(model.parameters, savedSettings);
      }
      assign(
        weights,
        model.parameters.map((p) => p.variable),
      );
      assign(firstMoments, state.optimizer.firstMoments);
      assign(secondMoments, state.optimizer.secondMoments);
      state.optimizer.step = step as number;
      state.sessionCounter = counter as number;
      state.samplingSeed = seed as number;
    },
  };
}

/**
 * The tokenizer a checkpoint was trained with: its saved corpus vocabulary, or the byte-level
 * protocol tokenizer. Create the policy with it before `load`.
 */
export function tokenizerFromCheckpoint(checkpoint: PolicyCheckpoint): Tokenizer {
  const vocabulary = (checkpoint.metadata as { tokenizer?: { vocabulary?: unknown } }).tokenizer?.vocabulary;
  if (vocabulary === undefined) return createProtocolTokenizer();
  if (!Array.isArray(vocabulary) || !vocabulary.every((w) => typeof w === 'string'))
    throw new InvalidArgumentError({
      argument: 'checkpoint.metadata.tokenizer.vocabulary',
      message: 'must be an array of words',
    });
  return createVocabularyTokenizer(vocabulary as string[]);
}
