import type { CallOptions, SetupCheck } from './common';

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
  doScore(question: string, answer: string, reference: string, options?: CallOptions): Promise<JudgeVerdict>;
}
