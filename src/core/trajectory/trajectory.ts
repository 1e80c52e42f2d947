import type { Action, InvalidActionReason } from '../protocol/actions';
import type { RewardOutcome } from '../reward/combine';
import type { BoundingBox, TokenStep, TokenUsage } from '../../ports/types';

/**
 * How an episode ended: the policy completed the search or answered, or the turn budget, the
 * context or an error ended it.
 */
export type TerminationReason = 'complete' | 'answer' | 'budget' | 'context' | 'error';

/** One search of a turn: the query, the hits, and the ranks of the chosen and golden pages. */
export interface SearchRecord {
  query: string;
  /** Basenames of the hits the engine returned, best first. */
  hitBasenames: string[];
  /** The page shown (the first hit not already retrieved in this episode), if any. */
  chosenBasename: string | null;
  /** 1-based rank of the chosen page in the hit list. */
  chosenRank: number | null;
  /** 1-based ranks of the golden pages among the hits (absent ones left out). */
  goldenRanks: number[];
}

/** One crop of a turn: the box as written and in source pixels, and the page it was cut from. */
export interface CropRecord {
  /** As the policy wrote it, in the shown image's pixel space. */
  bbox: BoundingBox;
  basename: string;
  /** The same region in the source page's pixels. */
  sourceRegion: BoundingBox;
  shownWidth: number;
  shownHeight: number;
}

/** One turn of an episode: the policy's text, the parsed action, and what the environment did. */
export interface TurnRecord {
  index: number;
  /** The policy's text for this turn (or the forced completion, with `forced: true`). */
  text: string;
  forced: boolean;
  think: string | null;
  action: Action | null;
  invalid: { reason: InvalidActionReason; message: string } | null;
  ignoredActions: string[];
  /** The observation text appended after the turn ('' when the episode ended). */
  observation: string;
  search?: SearchRecord;
  crop?: CropRecord;
  finishReason?: 'stop' | 'length' | 'eos';
}

/** One piece of evidence the generator was given: a page or a crop of one. */
export interface EvidenceRef {
  kind: 'page' | 'crop';
  basename: string;
  sourceRegion?: BoundingBox;
  width?: number;
  height?: number;
}

/**
 * A complete rollout (docs/method.md#trajectories). `fullInputIds` are the token ids exactly
 * as generated and appended; `lossMask[p]` is 1 only where position p was sampled by the policy.
 */
export interface Trajectory {
  formatVersion: 1;
  /** `${groupId}#${rolloutIndex}`: rewards and logs are keyed by it, never by batch position. */
  sampleId: string;
  groupId: string;
  promptUid: string;
  rolloutIndex: number;
  query: string;
  reference: string | null;
  /** Every answer the exact-match check accepts, where the prompt listed several (`PromptRecord.answers`). */
  answers?: string[];
  goldenBasenames: string[];
  promptLength: number;
  tokenSteps: TokenStep[];
  /**
   * Everything after the prompt as the protocol writes it: policy turns, observations (without a
   * chat template's wrapping, which only the token ids carry), and the generator's answer block.
   */
  generatedText: string;
  finalAnswer: string;
  fullInputIds: number[];
  generatedPositions: number[];
  lossMask: number[];
  turns: TurnRecord[];
  retrievedBasenames: string[];
  evidence: EvidenceRef[];
  terminated: TerminationReason;
  /** What ended the episode in error, or the generator's failure; `kind` as in RewardFailure. */
  error: { stage: string; message: string; kind?: string } | null;
  invalidActions: number;
  generatorUsage: TokenUsage | null;
  reward: number | null;
  rewardDetail: RewardOutcome | null;
  advantage: number | null;
}
