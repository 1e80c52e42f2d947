import type { CallOptions } from './common';

/**
 * One demonstration a frozen model can be shown in its prompt (docs/method.md#icd-selection).
 * `source` says where it came from; a distilled successful Searcher trajectory becomes one by
 * putting its question and final answer here and its run and sample ids in `source`.
 */
export interface IcdDemonstration {
  /** Its global index in the embedding table. */
  index: number;
  question: string;
  answer: string;
  /** Free text shown with the demonstration (a caption, the evidence a Searcher found). */
  context?: string;
  source?: { kind: 'dataset' | 'searcher-trajectory'; runId?: string; sampleId?: string };
}

/** A query to answer, with the human answers its accuracy is measured against. */
export interface IcdQuery {
  id: number;
  question: string;
  context?: string;
  /** The human answers (VQAv2 has ten): the soft accuracy counts matches among them. */
  answers: readonly string[];
}

/** The frozen model's answer to one query with a given set of demonstrations, and its accuracy. */
export interface IcdScore {
  /** The frozen model's answer. */
  answer: string;
  /** VQAv2 soft accuracy in [0, 1]. */
  accuracy: number;
}

/**
 * Scores an ordered list of demonstrations for a query with a frozen model: the model is
 * prompted with the demonstrations, then the query, and its answer is graded.
 */
export interface IcdScorer {
  readonly specificationVersion: 'v1';
  readonly provider: string;
  /**
   * Asks the frozen model `query` with `demonstrations` in its prompt, in their order, and scores its answer
   * against the human answers.
   */
  doScore(
    query: IcdQuery,
    demonstrations: readonly IcdDemonstration[],
    options?: CallOptions,
  ): Promise<IcdScore>;
}
