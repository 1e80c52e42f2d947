import type { Trajectory } from '../trajectory/trajectory';
import { answerScoreOf, type EpisodeSummary, type PromptStats } from './episodes';
import { ACTION_TAG_PATTERN, thinkSpans } from './think-rewrite';
import { DEFAULT_CURATION_SETTINGS } from './settings';

/**
 * Which successes `selectRareSuccesses` keeps; each default comes from `DEFAULT_CURATION_SETTINGS`.
 */
export interface DistillOptions {
  maxSuccessRate?: number;
  topK?: number;
  successScore?: number;
  /** Keep rollouts that never searched (default false: they were the judge-only hallucinations). */
  keepZeroSearch?: boolean;
  /** Keep rollouts with NDCG 0 (default false). */
  keepZeroNdcg?: boolean;
}

/** The rollouts kept for distillation, and how many prompts and successes each rule left out. */
export interface DistillSelection {
  selected: EpisodeSummary[];
  counts: {
    prompts: number;
    eligiblePrompts: number;
    successes: number;
    excludedZeroSearch: number;
    excludedZeroNdcg: number;
    selected: number;
  };
}

/**
 * Rare-success selection (docs/method.md#rare-success-distillation): prompts with success rate
 * <= 0.5 that have a success; their rollouts with answer score == 1 (the judge's, or the Search-R1
 * reward's exact match where no judge was asked); top-k per prompt ordered by
 * (score, NDCG) descending, then fewer searches, fewer crops, shorter text.
 */
export function selectRareSuccesses(
  episodes: readonly EpisodeSummary[],
  stats: readonly PromptStats[],
  options: DistillOptions = {},
): DistillSelection {
  const maxRate = options.maxSuccessRate ?? DEFAULT_CURATION_SETTINGS.distillMaxSuccessRate;
  const topK = options.topK ?? DEFAULT_CURATION_SETTINGS.distillTopK;
  const successAt = options.successScore ?? DEFAULT_CURATION_SETTINGS.successScore;
  const eligible = new Set(
    stats.filter((s) => s.successes > 0 && s.successRate <= maxRate).map((s) => s.promptUid),
  );
  const counts = {
    prompts: stats.length,
    eligiblePrompts: eligible.size,
    successes: 0,
    excludedZeroSearch: 0,
    excludedZeroNdcg: 0,
    selected: 0,
  };
  const byPrompt = new Map<string, EpisodeSummary[]>();
  for (const e of episodes) {
    const score = answerScoreOf(e);
    if (!eligible.has(e.promptUid) || score === null || score < successAt) continue;
    counts.successes++;
    if (!options.keepZeroSearch && e.searches === 0) {
      counts.excludedZeroSearch++;
      continue;
    }
    if (!options.keepZeroNdcg && (e.ndcg ?? 0) === 0) {
      counts.excludedZeroNdcg++;
      continue;
    }
    byPrompt.set(e.promptUid, [...(byPrompt.get(e.promptUid) ?? []), e]);
  }
  const selected: EpisodeSummary[] = [];
  for (const list of byPrompt.values())
    selected.push(...[...list].sort(compareForDistillation).slice(0, topK));
  counts.selected = selected.length;
  return { selected, counts };
}

/**
 * Orders successes best first: answer score, NDCG, then fewer searches, crops and characters, then
 * sample id.
 */
export function compareForDistillation(a: EpisodeSummary, b: EpisodeSummary): number {
  return (
    (answerScoreOf(b) ?? 0) - (answerScoreOf(a) ?? 0) ||
    (b.ndcg ?? 0) - (a.ndcg ?? 0) ||
    a.searches - b.searches ||
    a.crops - b.crops ||
    a.textLength - b.textLength ||
    a.sampleId.localeCompare(b.sampleId)
  );
}

/** One chat message of an SFT row. */
export interface SftMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** One SFT example in the seed's chat layout, tagged with its prompt and the format version. */
export interface SftRow {
  messages: SftMessage[];
  uid: string;
  format_version: string;
}

/** The `format_version` written in every SFT row; a reader refuses rows of another version. */
export const SFT_FORMAT_VERSION = 'searcher-rl-sft-v1';

/**
 * The seed's SFT layout: system, user (the question), then alternating assistant
 * (`<think>…</think>\n<action>`) and user (the observation) turns. The forced completion and the
 * generator's answer block are not the policy's and are left out; the last turn's observation
 * (empty when the episode ended) is not a user turn.
 */
export function sftRowFromTrajectory(trajectory: Trajectory, system: string): SftRow {
  const messages: SftMessage[] = [
    { role: 'system', content: system },
    { role: 'user', content: trajectory.query },
  ];
  for (const turn of trajectory.turns) {
    if (turn.forced) continue;
    messages.push({ role: 'assistant', content: turn.text.trim() });
    if (turn.observation.length > 0) messages.push({ role: 'user', content: turn.observation });
  }
  return { messages, uid: trajectory.sampleId, format_version: SFT_FORMAT_VERSION };
}

/**
 * The policy turns of a row whose `<think>` holds an action tag as text (`<think>use <bbox>
 * then</think>`): docs/method.md#rare-success-distillation removes such rows (format pollution teaches the policy to write
 * actions inside its reasoning). There is no clean original to roll back to, so the row goes.
 */
export function thinkActionTagTurns(row: SftRow): number[] {
  const turns: number[] = [];
  row.messages.forEach((message, index) => {
    if (message.role === 'assistant' && thinkSpans(message.content).some((t) => ACTION_TAG_PATTERN.test(t)))
      turns.push(index);
  });
  return turns;
}

/** Rows without an action tag inside a think, and how many were dropped. */
export function dropThinkActionTagRows(rows: readonly SftRow[]): { rows: SftRow[]; dropped: number } {
  const kept = rows.filter((row) => thinkActionTagTurns(row).length === 0);
  return { rows: kept, dropped: rows.length - kept.length };
}
