/** A question to run an episode on. */
export interface PromptRecord {
  /** Stable id of the question across runs (rewards and logs are keyed by it). */
  uid: string;
  question: string;
  /** Reference answer for the judge / answer check. */
  reference?: string;
  /**
   * Every answer the exact-match check accepts (Search-R1's `golden_answers`: Natural Questions
   * lists several for many questions); without it, the reference alone. The judge reads `reference`.
   */
  answers?: string[];
  /** Basenames of the pages that hold the answer (for NDCG). */
  goldenBasenames?: string[];
  metadata?: Record<string, unknown>;
}
