import { InvalidArgumentError } from '../errors';

/**
 * How an episode runs: its mode, turn and token budgets, sampling, and what an observation shows.
 */
export interface EpisodeConfig {
  /** `searcher`: search/bbox/search_complete, then the frozen Generator answers. `answer`: Search-R1, the policy answers. */
  mode: 'searcher' | 'answer';
  /** Policy turns per episode; invalid actions count. Seed 000 used 7 and 15. */
  maxTurns: number;
  /** Hits requested per search; the first one not yet retrieved in the episode is shown. */
  searchTopK: number;
  /** Tokens the policy may generate in one turn. */
  maxTurnTokens: number;
  /**
   * Prompt + turns + observations; beyond it the episode ends with `context`. `null`: the
   * policy's own context length (`PolicyBackend.contextLength`), or FALLBACK_CONTEXT_TOKENS for a
   * policy without a limit. A value above the policy's is refused.
   */
  maxContextTokens: number | null;
  /** Evidence items passed to the Generator (retrieved pages first, then crops). */
  maxEvidence: number;
  temperature: number;
  topP: number;
  /** Images are shown to the policy with their longer side at most this (bbox coordinates use the shown size). */
  policyImageMaxSide: number | null;
  /** Crops are enlarged to at least this longer side. */
  cropMinOutputSide: number;
  /** Characters of page text shown to a text policy per page. */
  observationMaxChars: number;
  /**
   * Which part of a longer page is shown: `start` (its first `observationMaxChars` characters) or
   * `query` (its first line and the lines that share the most of the search's words, as a search
   * engine's snippet: `queryExcerpt`).
   */
  observationExcerpt: 'start' | 'query';
  /** The text before the question in the prompt; `null`: the protocol instructions of `mode`. */
  instructions: string | null;
}

export const DEFAULT_EPISODE_CONFIG: Readonly<EpisodeConfig> = Object.freeze({
  mode: 'searcher',
  maxTurns: 7,
  searchTopK: 10,
  maxTurnTokens: 256,
  maxContextTokens: null,
  maxEvidence: 8,
  temperature: 1,
  topP: 1,
  policyImageMaxSide: null,
  cropMinOutputSide: 768,
  observationMaxChars: 2000,
  observationExcerpt: 'start',
  instructions: null,
});

export function resolveEpisodeConfig(partial: Partial<EpisodeConfig> = {}): EpisodeConfig {
  const config = { ...DEFAULT_EPISODE_CONFIG, ...partial };
  const positiveInt = [
    'maxTurns',
    'searchTopK',
    'maxTurnTokens',
    'maxEvidence',
    'cropMinOutputSide',
    'observationMaxChars',
  ] as const;
  for (const key of positiveInt) {
    const v = config[key];
    if (!(Number.isInteger(v) && v > 0))
      throw new InvalidArgumentError({
        argument: `episode.${key}`,
        message: `must be a positive integer, got ${String(v)}`,
      });
  }
  if (config.observationExcerpt !== 'start' && config.observationExcerpt !== 'query')
    throw new InvalidArgumentError({
      argument: 'episode.observationExcerpt',
      message: `must be 'start' or 'query', got ${String(config.observationExcerpt)}`,
    });
  if (config.mode !== 'searcher' && config.mode !== 'answer')
    throw new InvalidArgumentError({
      argument: 'episode.mode',
      message: `must be 'searcher' or 'answer', got ${String(config.mode)}`,
    });
  if (!(Number.isFinite(config.temperature) && config.temperature >= 0))
    throw new InvalidArgumentError({
      argument: 'episode.temperature',
      message: `must be >= 0, got ${config.temperature}`,
    });
  if (!(config.topP > 0 && config.topP <= 1))
    throw new InvalidArgumentError({
      argument: 'episode.topP',
      message: `must be in (0, 1], got ${config.topP}`,
    });
  if (
    config.policyImageMaxSide !== null &&
    !(Number.isInteger(config.policyImageMaxSide) && config.policyImageMaxSide > 0)
  ) {
    throw new InvalidArgumentError({
      argument: 'episode.policyImageMaxSide',
      message: `must be a positive integer or null, got ${String(config.policyImageMaxSide)}`,
    });
  }
  if (
    config.maxContextTokens !== null &&
    !(Number.isInteger(config.maxContextTokens) && config.maxContextTokens > 0)
  ) {
    throw new InvalidArgumentError({
      argument: 'episode.maxContextTokens',
      message: `must be a positive integer or null (the policy's context length), got ${String(config.maxContextTokens)}`,
    });
  }
  if (config.instructions !== null && typeof config.instructions !== 'string')
    throw new InvalidArgumentError({ argument: 'episode.instructions', message: 'must be a string or null' });
  return config;
}

/** The context of a policy that reports no limit (a scripted policy, a remote one not told its limit). */
export const FALLBACK_CONTEXT_TOKENS = 8192;

/**
 * The episode's context window for this policy: the configured one, else the policy's own, else
 * FALLBACK_CONTEXT_TOKENS. A configured window larger than the model's would overflow inside the
 * model at run time (every episode an error); it is refused instead.
 */
export function episodeContextTokens(
  config: Pick<EpisodeConfig, 'maxContextTokens'>,
  policy: { readonly contextLength?: number; readonly provider: string },
): number {
  const limit = policy.contextLength;
  if (config.maxContextTokens !== null && limit !== undefined && config.maxContextTokens > limit) {
    throw new InvalidArgumentError({
      argument: 'episode.maxContextTokens',
      message: `is ${config.maxContextTokens}, but the policy '${policy.provider}' takes at most ${limit} tokens; leave it null to follow the policy, or set it to ${limit} or less`,
    });
  }
  return config.maxContextTokens ?? limit ?? FALLBACK_CONTEXT_TOKENS;
}
