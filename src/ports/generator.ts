import type { CallOptions, SetupCheck } from './common';
import type { Evidence, TokenUsage } from './types';

export interface GeneratorAnswer {
  answer: string;
  usage?: TokenUsage;
}

/** The frozen Generator: answers the question from the evidence the Searcher collected. */
export interface Generator extends SetupCheck {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  doAnswer(question: string, evidence: readonly Evidence[], options?: CallOptions): Promise<GeneratorAnswer>;
}
