import type { CallOptions, SetupCheck } from './common';

/** A judge's grade of one answer against its reference. */
export interface JudgeVerdict {
  /** 1.0 correct, 0.5-0.9 partially correct, 0.0 wrong (docs/method.md#judge). */
  score: number;
  rationale?: string;
  /** The judge's raw output, kept for the reward log. */
  raw?: string;
}

/** Scores a generated answer against the reference answer. */
export interface Judge extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  /**
   * Grades `answer` against `reference` for `question`; the core treats a score outside [0, 1] as a failed
   * call.
   */
  doScore(question: string, answer: string, reference: string, options?: CallOptions): Promise<JudgeVerdict>;
}
