import { z } from 'zod';
import { ConfigValidationError } from './core/errors';
import { REWARD_PRESETS } from './core/reward/combine';

const positiveInt = () => z.number().int().positive();
const probability = () => z.number().min(0).max(1);

export const episodeConfigSchema = z
  .object({
    mode: z.enum(['searcher', 'answer']).default('searcher'),
    maxTurns: positiveInt().default(7),
    searchTopK: positiveInt().default(10),
    maxTurnTokens: positiveInt().default(256),
    maxContextTokens: positiveInt().default(8192),
    maxEvidence: positiveInt().default(8),
    temperature: z.number().min(0).default(1),
    topP: z.number().gt(0).max(1).default(1),
    policyImageMaxSide: positiveInt().nullable().default(null),
    cropMinOutputSide: positiveInt().default(768),
    observationMaxChars: positiveInt().default(2000),
    /** The text before the question (`null`: the protocol instructions of the mode). */
    instructions: z.string().nullable().default(null),
  })
  .strict();

const weightsSchema = z.object({ judge: z.number(), ndcg: z.number(), format: z.number() }).strict();

export const rewardConfigSchema = z
  .object({
    scheme: z.enum(['searcher', 'search-r1']).default('searcher'),
    /** Explicit weights, or a preset name: default, phase1, focused, unified. */
    weights: z.union([weightsSchema, z.enum(Object.keys(REWARD_PRESETS) as [keyof typeof REWARD_PRESETS])]).default('default'),
    ndcgK: positiveInt().nullable().default(null),
    ndcgIdeal: z.enum(['cutoff', 'all-golden']).default('cutoff'),
  })
  .strict();

export const rlConfigSchema = z
  .object({
    nAgent: positiveInt().default(4),
    advantage: z
      .object({
        std: z.enum(['population', 'unbiased']).default('population'),
        eps: z.number().min(0).optional(),
        normalize: z.boolean().default(true),
        dropZeroVarianceGroups: z.boolean().default(false),
      })
      .strict()
      .default({ std: 'population', normalize: true, dropZeroVarianceGroups: false }),
    loss: z
      .object({
        kind: z.enum(['ppo_clip', 'gspo']).default('gspo'),
        // Seed 000's focused rounds: clip 3e-4 / 4e-4 with GSPO.
        clipLow: z.number().min(0).default(3e-4),
        clipHigh: z.number().min(0).default(4e-4),
        aggregation: z.enum(['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum']).default('seq-mean-token-mean'),
        klCoef: z.number().min(0).default(0),
        klEstimator: z.enum(['k1', 'k2', 'k3']).default('k3'),
      })
      .strict()
      .default({ kind: 'gspo', clipLow: 3e-4, clipHigh: 4e-4, aggregation: 'seq-mean-token-mean', klCoef: 0, klEstimator: 'k3' }),
    /** Passes over each step's batch (verl ppo_epochs). */
    ppoEpochs: positiveInt().default(1),
    /** Sequences per optimizer step (`null`: the whole batch in one step). */
    miniBatchSize: positiveInt().nullable().default(null),
    /** Entropy bonus (seed 000: 0). */
    entropyCoef: z.number().min(0).default(0),
  })
  .strict();

const PORT_DEFAULTS = { maxConcurrent: null, timeoutMs: 60_000, maxRetries: 2, requestsPerMinute: null, tokensPerMinute: null };
const portPolicy = () =>
  z
    .object({
      /** Calls in flight at once (`null`: no cap). */
      maxConcurrent: positiveInt().nullable().default(null),
      /** Per attempt (`null`: none). */
      timeoutMs: z.number().positive().nullable().default(60_000),
      /** Retries of 408/409/429/5xx, connection errors and timeouts, honouring Retry-After up to 60 s. */
      maxRetries: z.number().int().min(0).max(10).default(2),
      requestsPerMinute: z.number().min(1).nullable().default(null),
      tokensPerMinute: z.number().positive().nullable().default(null),
    })
    .strict()
    .default(PORT_DEFAULTS);

/** The reliability layer per port (DESIGN "Provider calls"), applied wherever the port is used. */
export const portsConfigSchema = z
  .object({ searchEngine: portPolicy(), generator: portPolicy(), judge: portPolicy(), imageOps: portPolicy() })
  .strict();

/** Streaming rewards (seed 000 section 5.2): stage caps, the bounded buffer and the deadlines. */
export const pipelineConfigSchema = z
  .object({
    /** `streaming`, `synchronous` (all rollouts, then all rewards) or `staged` (the seed's loop: rollouts, then generation, then judging). */
    mode: z.enum(['streaming', 'synchronous', 'staged']).default('streaming'),
    limits: z
      .object({
        rollout: positiveInt().default(4),
        generate: positiveInt().default(64),
        score: positiveInt().default(64),
        bufferedGroups: positiveInt().default(8),
        rewardGroups: positiveInt().default(64),
      })
      .strict()
      .default({ rollout: 4, generate: 64, score: 64, bufferedGroups: 8, rewardGroups: 64 }),
    deadlines: z
      .object({
        totalTimeoutMs: z.number().positive().default(600_000),
        rewardTimeoutMs: z.number().positive().default(90_000),
        stepTimeoutMs: z.number().positive().nullable().default(null),
      })
      .strict()
      .default({ totalTimeoutMs: 600_000, rewardTimeoutMs: 90_000, stepTimeoutMs: null }),
  })
  .strict();

/** Adapters the composition root can build from configuration alone. */
export const adaptersConfigSchema = z
  .object({
    searchEngine: z
      .discriminatedUnion('type', [
        z
          .object({
            type: z.literal('mock'),
            pages: z.array(z.object({ basename: z.string().min(1), text: z.string(), id: z.string().optional(), keywords: z.array(z.string()).optional() }).strict()).default([]),
            knowledgeBase: z.record(z.string(), z.string()).default({}),
          })
          .strict(),
      ])
      .default({ type: 'mock', pages: [], knowledgeBase: {} }),
    policy: z
      .discriminatedUnion('type', [
        z
          .object({
            type: z.literal('scripted'),
            script: z.union([z.array(z.string()).min(1), z.array(z.array(z.string()).min(1)).min(1)]),
            logProb: z.number().max(0).default(0),
          })
          .strict(),
      ])
      .optional(),
    generator: z
      .discriminatedUnion('type', [
        z.object({ type: z.literal('mock'), facts: z.record(z.string(), z.string()).default({}), answer: z.string().optional(), fallback: z.string().optional() }).strict(),
      ])
      .default({ type: 'mock', facts: {} }),
    judge: z
      .discriminatedUnion('type', [z.object({ type: z.literal('rule'), partialThreshold: probability().default(0.5) }).strict()])
      .default({ type: 'rule', partialThreshold: 0.5 }),
    imageOps: z.discriminatedUnion('type', [z.object({ type: z.literal('raw-rgba') }).strict()]).default({ type: 'raw-rgba' }),
    store: z
      .discriminatedUnion('type', [z.object({ type: z.literal('memory') }).strict(), z.object({ type: z.literal('jsonl'), dir: z.string().min(1) }).strict()])
      .default({ type: 'memory' }),
  })
  .strict();

export const searcherConfigSchema = z
  .object({
    episode: episodeConfigSchema.default(episodeConfigSchema.parse({})),
    reward: rewardConfigSchema.default(rewardConfigSchema.parse({})),
    rl: rlConfigSchema.default(rlConfigSchema.parse({})),
    pipeline: pipelineConfigSchema.default(pipelineConfigSchema.parse({})),
    ports: portsConfigSchema.default(portsConfigSchema.parse({})),
    adapters: adaptersConfigSchema.default(adaptersConfigSchema.parse({})),
  })
  .strict();

export type SearcherConfigInput = z.input<typeof searcherConfigSchema>;
export type SearcherConfig = z.output<typeof searcherConfigSchema>;

/** Validates a configuration; an invalid one throws ConfigValidationError naming the field (`rl.loss.clipLow`). */
export function parseSearcherConfig(input: unknown): SearcherConfig {
  const result = searcherConfigSchema.safeParse(input ?? {});
  if (result.success) return result.data;
  throw new ConfigValidationError(
    result.error.issues.flatMap((issue) => {
      const path = issue.path.map(String);
      // An unknown key is reported at the key itself, not at its parent object.
      if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ field: [...path, key].join('.'), message: 'unknown field (misspelt, or not supported here)' }));
      return [{ field: path.join('.') || '(root)', message: issue.message }];
    }),
  );
}
