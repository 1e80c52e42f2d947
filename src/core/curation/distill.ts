import type { Trajectory } from '../trajectory/trajectory';
import type { EpisodeSummary, PromptStats } from './episodes';
import { DEFAULT_CURATION_SETTINGS } from './settings';

export interface DistillOptions {
  maxSuccessRate?: number;
  topK?: number;
  successScore?: number;
  /** Keep rollouts that never searched (default false: they were the judge-only hallucinations). */
  keepZeroSearch?: boolean;
  /** Keep rollouts with NDCG 0 (default false). */
  keepZeroNdcg?: boolean;
}

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
 * <= 0.5 that have a success; their rollouts with judge score == 1; top-k per prompt ordered by
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
    if (!eligible.has(e.promptUid) || e.judgeScore === null || e.judgeScore < successAt) continue;
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

export function compareForDistillation(a: EpisodeSummary, b: EpisodeSummary): number {
  return (
    (b.judgeScore ?? 0) - (a.judgeScore ?? 0) ||
    (b.ndcg ?? 0) - (a.ndcg ?? 0) ||
    a.searches - b.searches ||
    a.crops - b.crops ||
    a.textLength - b.textLength ||
    a.sampleId.localeCompare(b.sampleId)
  );
}

export interface SftMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface SftRow {
  messages: SftMessage[];
  uid: string;
  format_version: string;
}

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
