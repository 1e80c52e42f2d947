import { extractAnswer } from '../adapters/extractive/index';
import type { ScriptContext } from '../adapters/scripted-policy/index';
import { parseRegionMarks } from '../core/protocol/location';
import { lineAfter, tagSpans } from '../core/protocol/tag-spans';
import { hashString } from '../core/random';
import { contentQuery } from './demonstrator';

// The baselines' scripts (naive RAG, with a random or a rule's crop), apart from their measurement
// (baselines.ts), so that the environment can name them without importing the evaluation.

/**
 * A scripted Searcher measured beside the trained one on the same questions, reader and judge
 * (issue 39: every learning figure is stated beside its strongest baseline). A `reference` line
 * (the slide oracle, which knows where each fact was drawn) is shown, not measured against.
 */
export interface BaselinePolicy {
  name: string;
  description: string;
  reference?: boolean;
  /** The turn it writes given the episode so far (a scripted policy's script). */
  script: (context: ScriptContext) => string;
}

const COMPLETE = '<search_complete>true</search_complete>';

/** The question of the episode, as the policy is shown it. */
const askedQuestion = (context: string) => lineAfter(context, 'Question: ')?.trim() ?? '';
const lastObservation = (context: string) =>
  tagSpans(context, '<information>', '</information>')
    .map((s) => s.body)
    .at(-1) ?? '';

/**
 * Naive RAG: one search with the question's content words (`contentQuery`; BM25 finds what the
 * whole question finds), the top hit read by the run's reader, no crop. With `crop`, the region it
 * crops where the page marks some (a name it marks, or null for none), given the page's text.
 */
export function naiveRagScript(
  crop: ((question: string, marks: readonly string[], page: string) => string | null) | null = null,
): (context: ScriptContext) => string {
  return ({ turn, context }) => {
    const question = askedQuestion(context);
    if (turn === 0) return `<search>${contentQuery(question) || question}</search>`;
    if (crop === null || context.includes('<bbox>')) return COMPLETE;
    const page = lastObservation(context);
    const region = crop(
      question,
      parseRegionMarks(page).map((m) => m.label),
      page,
    );
    return region === null ? COMPLETE : `<bbox>${region}</bbox>`;
  };
}

/** Naive RAG, the baseline every run states its figure beside. */
const NAIVE_RAG: BaselinePolicy = {
  name: 'naive RAG',
  description: "one search with the question's words, the top hit read, no crop",
  script: naiveRagScript(),
};

/** The generic baselines: naive RAG, and naive RAG cropping a random one of the regions the page marks. */
export function genericBaselines(): BaselinePolicy[] {
  return [
    NAIVE_RAG,
    {
      name: 'RAG + random region',
      description: 'naive RAG, then a crop of a random one of the regions the page marks',
      script: naiveRagScript((question, marks) =>
        marks.length === 0 ? null : marks[hashString(question) % marks.length]!,
      ),
    },
  ];
}

/**
 * Naive RAG where the policy answers itself (`episode.mode: answer`, Search-R1's setting): one
 * search with the question's words, then the extractive reader's answer from what it read.
 */
export function naiveRagAnswerScript(): (context: ScriptContext) => string {
  return ({ turn, context }) => {
    const question = askedQuestion(context);
    if (turn === 0) return `<search>${contentQuery(question) || question}</search>`;
    return `<answer>${extractAnswer(question, [lastObservation(context)]) ?? 'unknown'}</answer>`;
  };
}

/**
 * The baselines of a run on your own data: naive RAG and, where a Generator answers from the
 * evidence (`episode.mode: searcher`), the direct answer without any search (Search-R1's table's
 * first rows). Both read with the run's own reader and judge, as the trained Searcher does.
 */
export function datasetBaselines(mode: 'searcher' | 'answer'): BaselinePolicy[] {
  if (mode === 'answer')
    return [
      {
        name: 'naive RAG',
        description:
          "one search with the question's words, answered by the extractive reader from the top hits",
        script: naiveRagAnswerScript(),
      },
    ];
  return [
    NAIVE_RAG,
    {
      name: 'direct answer',
      description: 'no search: the reader answers from the question alone',
      script: () => COMPLETE,
    },
  ];
}
