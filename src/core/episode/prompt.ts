import { neutraliseTags } from '../protocol/observation';

/**
 * The Searcher's instructions (after the reference implementation's prompt, docs/method.md#action-protocol): begin every turn with <think>, then exactly
 * one action on its own line; vary queries; crop small print; finish with search_complete.
 */
export const SEARCHER_INSTRUCTIONS = [
  'You are a search agent. Find the pages (slides, documents) that answer the question; another model will answer from the pages you collect.',
  'Each turn, begin with <think>your reasoning</think>, then give exactly one action on its own line:',
  '<search>query</search> to search (a repeated query shows the next result; vary your queries),',
  '<bbox>[x1, y1, x2, y2]</bbox> to crop and enlarge a region of the most recent image (pixels of the image as shown), or <bbox>name</bbox> for a region the page marks as [name at ...],',
  '<search_complete>true</search_complete> when the collected pages are enough to answer.',
].join('\n');

/** Search-R1 mode: the policy answers itself. */
export const ANSWER_INSTRUCTIONS = [
  'Answer the question. You may search for information.',
  'Each turn, begin with <think>your reasoning</think>, then give exactly one action:',
  '<search>query</search> to search; results come back between <information> and </information>,',
  '<answer>final answer</answer> when you know the answer.',
].join('\n');

/** The policy's prompt: the instructions, then the question with its tag-like text defused (data, not protocol). */
export function buildPrompt(
  question: string,
  mode: 'searcher' | 'answer',
  instructions: string | null = null,
): string {
  const text = instructions ?? (mode === 'searcher' ? SEARCHER_INSTRUCTIONS : ANSWER_INSTRUCTIONS);
  const asked = neutraliseTags(question);
  return text === '' ? `Question: ${asked}\n` : `${text}\n\nQuestion: ${asked}\n`;
}
