import { episodeContextTokens, FALLBACK_CONTEXT_TOKENS } from '../core/episode/config';
import { buildPrompt } from '../core/episode/prompt';
import { ConfigValidationError } from '../core/errors';
import type { PromptRecord } from '../core/types';
import type { Tokenizer } from '../ports/types';
import type { RunConfig } from './config';

/** What the check needs of the run's policy: its tokenizer, its context length (if it has one), its name. */
export interface FitPolicy {
  readonly tokenizer: Tokenizer;
  readonly contextLength?: number;
  readonly provider: string;
}

/**
 * Refuses a run whose prompts cannot fit the policy's context, before the run starts: the longest
 * prompt (the instructions and a question, in the run's own tokenizer and prompt template) plus
 * one turn (`searcher.episode.maxTurnTokens`) must fit the episode's context (`maxContextTokens`,
 * at most the policy's `contextLength`). Otherwise every episode would end with `context` before
 * the policy acts (RL on nothing), or the warm start would fail inside the model. The error names
 * the fields to change and by how much.
 */
export function checkPromptsFit(
  config: RunConfig,
  prompts: readonly PromptRecord[],
  policy: FitPolicy,
): void {
  const episode = config.searcher.episode;
  const own = config.searcher.adapters.policy === undefined;
  const limitField = own ? 'policy.contextLength' : `searcher.adapters.policy (${policy.provider})`;
  const limit = policy.contextLength;
  if (episode.maxContextTokens !== null && limit !== undefined && episode.maxContextTokens > limit)
    throw new ConfigValidationError({
      issues: [
        {
          field: 'searcher.episode.maxContextTokens',
          message: `is ${episode.maxContextTokens}, but the policy takes at most ${limit} tokens (${limitField}); set it to ${limit} or less, or null to follow the policy${own ? ', or raise policy.contextLength' : ''}`,
        },
      ],
    });
  const window = episodeContextTokens(episode, policy);
  const count = (question: string, instructions: string | null) =>
    policy.tokenizer.encode(buildPrompt(question, episode.mode, instructions)).length;
  let longest: { uid: string; question: string; tokens: number } | null = null;
  for (const p of prompts) {
    const tokens = count(p.question, episode.instructions);
    if (longest === null || tokens > longest.tokens) longest = { uid: p.uid, question: p.question, tokens };
  }
  if (longest === null) return;
  const needed = longest.tokens + episode.maxTurnTokens;
  if (needed <= window) return;
  const instructionTokens = longest.tokens - count(longest.question, '');
  const windowFrom =
    episode.maxContextTokens !== null
      ? `searcher.episode.maxContextTokens ${episode.maxContextTokens}`
      : limit !== undefined
        ? `${limitField} ${limit}`
        : `the fallback of ${FALLBACK_CONTEXT_TOKENS} for a policy that reports no limit`;
  const issues = [
    {
      field: 'searcher.episode',
      message: `the longest prompt (question '${longest.uid}') is ${longest.tokens} tokens in the policy's tokenizer, ${instructionTokens} of them the instructions${episode.instructions === null ? " (searcher.episode.instructions is null: the protocol's own)" : ''}; with one turn (searcher.episode.maxTurnTokens ${episode.maxTurnTokens}) it needs ${needed}, but the episode's context is ${window} (${windowFrom}). Change one of the fields below`,
    },
  ];
  const questionOnly = needed - instructionTokens;
  if (instructionTokens > 0)
    issues.push({
      field: 'searcher.episode.instructions',
      message:
        questionOnly <= window
          ? `shorter: at most ${window - questionOnly} tokens of instructions fit ('' leaves the question alone: ${questionOnly} tokens with the turn)`
          : `even '' (the question alone) needs ${questionOnly} tokens with the turn; change another field as well`,
    });
  if (own) {
    issues.push({ field: 'policy.contextLength', message: `at least ${needed} (it is ${limit ?? 'unset'})` });
    if (episode.maxContextTokens !== null)
      issues.push({
        field: 'searcher.episode.maxContextTokens',
        message: `at least ${needed}, with policy.contextLength (or null to follow it)`,
      });
  } else
    issues.push({
      field: 'searcher.episode.maxContextTokens',
      message:
        limit !== undefined && needed > limit
          ? `cannot help: the policy takes at most ${limit} tokens; shorten the prompt instead`
          : `at least ${needed}${limit !== undefined ? ` (the policy takes ${limit})` : ''}`,
    });
  if (window - longest.tokens > 0)
    issues.push({
      field: 'searcher.episode.maxTurnTokens',
      message: `at most ${window - longest.tokens} (it is ${episode.maxTurnTokens})`,
    });
  throw new ConfigValidationError({ issues });
}
