import type { CallOptions, SetupCheck } from './common';
import type { Evidence, TokenUsage } from './types';

/** The frozen generator's answer to a question, with the tokens it cost when the provider reports them. */
export interface GeneratorAnswer {
  answer: string;
  usage?: TokenUsage;
}

/** The frozen Generator: answers the question from the evidence the Searcher collected. */
export interface Generator extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  /**
   * Answers `question` from the evidence the Searcher collected (pages and crops); called by the core, which
   * adds retries, timeouts and validation.
   */
  doAnswer(question: string, evidence: readonly Evidence[], options?: CallOptions): Promise<GeneratorAnswer>;
}
