import { z } from 'zod';
import { DEFAULT_CALL_POLICIES, PORT_NAMES, type SearcherPortName } from './core/calls/call-policy';
import { DEFAULT_EPISODE_CONFIG } from './core/episode/config';
import { ConfigValidationError } from './core/errors';
import {
  DEFAULT_PIPELINE_DEADLINES,
  DEFAULT_PIPELINE_LIMITS,
  DEFAULT_PIPELINE_MODE,
  PIPELINE_MODES,
} from './core/pipeline/types';
import { REWARD_PRESETS, type RewardWeights, resolveRewardWeights } from './core/reward/combine';
import { DEFAULT_REWARD_CONFIG, type RewardSettings, SEARCH_R1_REWARDS } from './core/reward/score';
import { ADVANTAGE_STD_KINDS } from './core/rl/advantages';
import { LOSS_AGGREGATIONS } from './core/rl/aggregation';
import { KL_ESTIMATORS, type KlEstimator } from './core/rl/kl';
import { misplacedLossSettings, POLICY_LOSS_KINDS } from './core/rl/policy-loss';
import { DEFAULT_RL_SETTINGS } from './core/rl/settings';
import { issueFields, positiveInt } from './provider-utils/settings';
import type {
  AdapterRegistry,
  AdaptersSectionSchema,
  AnyAdapterDefinition,
} from './registry/adapter-registry';
import { ADAPTER_REGISTRY } from './registry/adapters';

// Every default below is a core constant (DEFAULT_EPISODE_CONFIG, DEFAULT_RL_SETTINGS, ...): the
// configuration restates none of them. `test/defaults.test.ts` checks that `{}` parses to them.

const E = DEFAULT_EPISODE_CONFIG;

export const episodeConfigSchema = z
  .object({
    mode: z
      .enum(['searcher', 'answer'])
      .default(E.mode)
      .describe(
        '`searcher`: search/bbox/search_complete, then the frozen Generator answers. `answer`: Search-R1, the policy answers.',
      ),
    maxTurns: positiveInt().default(E.maxTurns).describe('Policy turns per episode; invalid actions count.'),
    searchTopK: positiveInt()
      .default(E.searchTopK)
      .describe('Hits requested per search; the first one not yet retrieved in the episode is shown.'),
    maxTurnTokens: positiveInt()
      .default(E.maxTurnTokens)
      .describe('Tokens the policy may generate in one turn.'),
    maxContextTokens: positiveInt()
      .nullable()
      .default(E.maxContextTokens)
      .describe(
        "Prompt + turns + observations; beyond it the episode ends with `context` (`null`: the policy's own context length).",
      ),
    maxEvidence: positiveInt()
      .default(E.maxEvidence)
      .describe('Evidence items passed to the Generator (retrieved pages first, then crops).'),
    temperature: z.number().min(0).default(E.temperature),
    topP: z.number().gt(0).max(1).default(E.topP),
    policyImageMaxSide: positiveInt()
      .nullable()
      .default(E.policyImageMaxSide)
      .describe(
        'Images are shown to the policy with their longer side at most this (bbox coordinates use the shown size).',
      ),
    cropMinOutputSide: positiveInt()
      .default(E.cropMinOutputSide)
      .describe('Crops are enlarged to at least this longer side.'),
    observationMaxChars: positiveInt()
      .default(E.observationMaxChars)
      .describe('Characters of page text shown to a text policy per page.'),
    observationExcerpt: z
      .enum(['start', 'query'])
      .default(E.observationExcerpt)
      .describe(
        "Which part of a page longer than observationMaxChars is shown: 'start' (its first characters) or 'query' (its first line, then the lines sharing the most of the search's words, in the page's order, as a search engine's snippet: a table's row of the asked entity though it is far down the page).",
      ),
    instructions: z
      .string()
      .nullable()
      .default(E.instructions)
      .describe(
        'The text before the question in the prompt (`null`: the protocol instructions of the mode).',
      ),
  })
  .strict();

const weightsSchema = z.object({ judge: z.number(), ndcg: z.number(), format: z.number() }).strict();
const R = DEFAULT_REWARD_CONFIG;

export const rewardConfigSchema = z
  .object({
    scheme: z.enum(['searcher', 'search-r1']).default(R.scheme),
    weights: z
      .union([weightsSchema, z.enum(Object.keys(REWARD_PRESETS) as [keyof typeof REWARD_PRESETS])])
      .default(R.weights)
      .describe('Explicit weights, or a preset name: default, phase1, focused, unified.'),
    ndcgK: positiveInt().nullable().default(R.ndcgK).describe('NDCG cutoff (`null`: everything retrieved).'),
    ndcgIdeal: z.enum(['cutoff', 'all-golden']).default(R.ndcgIdeal),
    searchR1Reward: z
      .enum(SEARCH_R1_REWARDS)
      .default(R.searchR1Reward)
      .describe(
        "Under scheme 'search-r1': `format-answer` the format check plus the answer check of docs/method.md#search-r1-reward (-1 to 2.5: 2 exact, 1 similar, 0.5 the not-found answer); `exact-match` Search-R1's outcome reward (its qa_em: 1 when the last answer equals the reference after SQuAD's normalisation, else 0).",
      ),
  })
  .strict();

/**
 * The settings the core scores with, from a parsed reward section: every field as given, the
 * weights resolved from a preset name. The Searcher and `serve-env` both take them from here, so a
 * field added to the section reaches both.
 */
export function rewardSettingsOf(
  reward: z.output<typeof rewardConfigSchema>,
): RewardSettings & { weights: RewardWeights } {
  const { weights, ...rest } = reward;
  return { ...rest, weights: resolveRewardWeights(weights) };
}

const RL = DEFAULT_RL_SETTINGS;

export const rlConfigSchema = z
  .object({
    nAgent: positiveInt().default(RL.nAgent).describe('Rollouts per prompt (n_agent).'),
    advantage: z
      .object({
        std: z.enum(ADVANTAGE_STD_KINDS).default(RL.advantage.std),
        eps: z.number().min(0).optional(),
        normalize: z.boolean().default(RL.advantage.normalize),
        dropZeroVarianceGroups: z.boolean().default(RL.advantage.dropZeroVarianceGroups),
      })
      .strict()
      .prefault({}),
    loss: z
      .object({
        kind: z.enum(POLICY_LOSS_KINDS).default(RL.loss.kind),
        clipLow: z.number().min(0).default(RL.loss.clipLow),
        clipHigh: z.number().min(0).default(RL.loss.clipHigh),
        aggregation: z
          .enum(
            LOSS_AGGREGATIONS as [
              (typeof LOSS_AGGREGATIONS)[number],
              ...(typeof LOSS_AGGREGATIONS)[number][],
            ],
          )
          .default(RL.loss.aggregation),
        klCoef: z.number().min(0).default(RL.loss.klCoef),
        klEstimator: z.enum(KL_ESTIMATORS as [KlEstimator, ...KlEstimator[]]).default(RL.loss.klEstimator),
        /** `rollout` (the default: the rollout policy's log-probs) or `initial` (a frozen copy of the initial policy, as verl; needs ports.referencePolicy). */
        klReference: z.enum(['rollout', 'initial']).optional(),
        /** PPO-clip dual-clip with bound clipRatioC (verl's clip_ratio_c, default 3). */
        dualClip: z.boolean().optional(),
        clipRatioC: z.number().gt(1).optional(),
        /** PPO-clip: clamp the token log-ratio to ±this (verl: 20). */
        logRatioClamp: z.number().positive().nullable().optional(),
      })
      .strict()
      .prefault({}),
    ppoEpochs: positiveInt()
      .default(RL.ppoEpochs)
      .describe("Passes over each step's batch (verl ppo_epochs)."),
    miniBatchSize: positiveInt()
      .nullable()
      .default(RL.miniBatchSize)
      .describe('Sequences per optimizer step (`null`: the whole batch in one step).'),
    entropyCoef: z.number().min(0).default(RL.entropyCoef),
    stateMasking: z
      .boolean()
      .default(RL.stateMasking)
      .describe(
        "Train only the policy's own tokens (`false`: the observation tokens between them too, an ablation).",
      ),
  })
  .strict();

const callPolicy = (port: SearcherPortName) => {
  const d = DEFAULT_CALL_POLICIES[port];
  return z
    .object({
      maxConcurrent: positiveInt()
        .nullable()
        .default(d.maxConcurrent)
        .describe('Calls in flight at once (`null`: no cap).'),
      timeoutMs: z
        .number()
        .positive()
        .nullable()
        .default(d.timeoutMs)
        .describe('Per attempt (`null`: none).'),
      maxRetries: z
        .number()
        .int()
        .min(0)
        .max(10)
        .default(d.maxRetries)
        .describe(
          'Retries of 408/409/429/5xx, connection errors and timeouts, honouring Retry-After up to 60 s.',
        ),
      requestsPerMinute: z.number().min(1).nullable().default(d.requestsPerMinute),
      tokensPerMinute: z.number().positive().nullable().default(d.tokensPerMinute),
    })
    .strict()
    .prefault({});
};

/** How each port is called: timeouts, retries, caps and rate limits (docs/method.md#provider-calls). */
export const callsConfigSchema = z
  .object(
    Object.fromEntries(PORT_NAMES.map((port) => [port, callPolicy(port)])) as Record<
      SearcherPortName,
      ReturnType<typeof callPolicy>
    >,
  )
  .strict();

/** Streaming rewards (docs/method.md#streaming-rewards): stage caps, the bounded buffer and the deadlines. */
export const pipelineConfigSchema = z
  .object({
    mode: z
      .enum(PIPELINE_MODES as ['streaming', 'synchronous', 'staged'])
      .default(DEFAULT_PIPELINE_MODE)
      .describe(
        '`streaming`, `synchronous` (all rollouts, then all rewards) or `staged` (rollouts, then generation, then judging).',
      ),
    limits: z
      .object({
        rollout: positiveInt().default(DEFAULT_PIPELINE_LIMITS.rollout),
        generate: positiveInt().default(DEFAULT_PIPELINE_LIMITS.generate),
        score: positiveInt().default(DEFAULT_PIPELINE_LIMITS.score),
        bufferedGroups: positiveInt().default(DEFAULT_PIPELINE_LIMITS.bufferedGroups),
        rewardGroups: positiveInt().default(DEFAULT_PIPELINE_LIMITS.rewardGroups),
      })
      .strict()
      .prefault({}),
    deadlines: z
      .object({
        totalTimeoutMs: z.number().positive().default(DEFAULT_PIPELINE_DEADLINES.totalTimeoutMs),
        rewardTimeoutMs: z.number().positive().default(DEFAULT_PIPELINE_DEADLINES.rewardTimeoutMs),
        stepTimeoutMs: z.number().positive().nullable().default(DEFAULT_PIPELINE_DEADLINES.stepTimeoutMs),
      })
      .strict()
      .prefault({}),
  })
  .strict();

/**
 * The adapters the composition root builds from configuration alone (`src/container.ts`), each
 * with its factory's own settings: derived from the adapter registry (src/registry/adapters.ts),
 * one discriminated union on `type` per port. Vendor SDKs are loaded only for the adapters named.
 */
export const adaptersConfigSchema = ADAPTER_REGISTRY.configSchema;

/** The Searcher's sections other than its adapters: shared by `createSearcher` and the run's configuration. */
export const searcherSectionsShape = {
  episode: episodeConfigSchema.prefault({}),
  reward: rewardConfigSchema.prefault({}),
  rl: rlConfigSchema.prefault({}),
  pipeline: pipelineConfigSchema.prefault({}),
  calls: callsConfigSchema.prefault({}),
};

/** The checks across the Searcher's sections (of `searcherConfigSchema` and the run's `searcher`). */
export function refineSearcherSections(
  config: {
    episode: z.output<typeof episodeConfigSchema>;
    reward: z.output<typeof rewardConfigSchema>;
    rl: z.output<typeof rlConfigSchema>;
  },
  ctx: z.RefinementCtx,
): void {
  // The Search-R1 reward scores the policy's own <answer> (docs/method.md#search-r1-mode); in
  // searcher mode it would score the Generator's appended answer instead.
  if (config.reward.scheme === 'search-r1' && config.episode.mode !== 'answer') {
    ctx.addIssue({
      code: 'custom',
      path: ['reward', 'scheme'],
      message: `'search-r1' scores the policy's own answer: set episode.mode to 'answer' (it is '${config.episode.mode}')`,
    });
  }
  if (
    config.reward.scheme !== 'search-r1' &&
    config.reward.searchR1Reward !== DEFAULT_REWARD_CONFIG.searchR1Reward
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['reward', 'searchR1Reward'],
      message: `'${config.reward.searchR1Reward}' is a reward of scheme 'search-r1': set reward.scheme to 'search-r1' (it is '${config.reward.scheme}')`,
    });
  }
  // Settings of a loss kind given with another kind (the core's registry says whose each is).
  for (const { field, message } of misplacedLossSettings(config.rl.loss))
    ctx.addIssue({ code: 'custom', path: ['rl', 'loss', field], message });
}

/**
 * The Searcher's configuration (episode, reward, RL, pipeline, calls and `adapters`) as a zod
 * schema; `parseSearcherConfig` applies it.
 */
export const searcherConfigSchema = searcherConfigSchemaOf(ADAPTER_REGISTRY);

/** The Searcher's configuration over the adapters of `registry` (the built-in ones, or with yours added). */
export function searcherConfigSchemaOf<D extends AnyAdapterDefinition>(registry: AdapterRegistry<D>) {
  return z
    .object({ ...searcherSectionsShape, adapters: registry.configSchema.prefault({}) })
    .strict()
    .superRefine(refineSearcherSections);
}

/**
 * The ports a configuration sets (`adapters.judge: {type: 'openai'}`) over an environment's (the
 * slide environment's SQLite FTS5, sharp, slide reader and rule judge): a configured port is never
 * dropped for the environment's.
 */
export function withEnvironmentAdapters(
  environment: AdaptersConfigInput,
  configured: Partial<Record<keyof AdaptersConfigInput, unknown>> | undefined,
): AdaptersConfigInput {
  const set = Object.fromEntries(
    Object.entries(configured ?? {}).filter(([, value]) => value !== undefined),
  ) as AdaptersConfigInput;
  return { ...environment, ...set };
}

/**
 * A Searcher configuration as written: every field optional, defaults filled by
 * `parseSearcherConfig`.
 */
export type SearcherConfigInput = z.input<typeof searcherConfigSchema>;
/** A validated Searcher configuration with every default filled. */
export type SearcherConfig = z.output<typeof searcherConfigSchema>;
/** Which adapter each port uses, with its factory's settings (validated). */
export type AdaptersConfig = z.output<typeof adaptersConfigSchema>;
/** `config.adapters` as written: a `type` per port and that adapter's settings. */
export type AdaptersConfigInput = z.input<typeof adaptersConfigSchema>;

/** A Searcher configuration as written whose `adapters` may name the adapters of registry `D`. */
export type SearcherConfigInputOf<D extends AnyAdapterDefinition> = Omit<SearcherConfigInput, 'adapters'> & {
  adapters?: z.input<AdaptersSectionSchema<D>>;
};

/**
 * Validates a configuration; an invalid one throws ConfigValidationError naming each field
 * (`rl.loss.clipLow`). With `registry`, `adapters` may name its adapters (`ADAPTER_REGISTRY.with(yours)`).
 */
export function parseSearcherConfig(input: unknown, registry?: AdapterRegistry): SearcherConfig {
  const schema =
    registry === undefined || registry === ADAPTER_REGISTRY
      ? searcherConfigSchema
      : searcherConfigSchemaOf(registry);
  const result = schema.safeParse(input ?? {});
  if (result.success) return result.data as SearcherConfig;
  throw new ConfigValidationError({ issues: issueFields(result.error.issues) });
}
