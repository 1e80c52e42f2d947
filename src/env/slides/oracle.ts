import { hashString } from '../../core/random';
import type { ScriptContext } from '../../adapters/scripted-policy/scripted-policy';
import { SLIDE_HEIGHT, type CorpusQuestion, type SlideCorpus } from './corpus';

/**
 * The box that holds a slide's small print, in slide pixels: narrow enough that the default crop
 * enlargement (longer side 768) makes 7 px type at least 14 px.
 */
export const SMALL_PRINT_BOX: readonly [number, number, number, number] = [36, SLIDE_HEIGHT - 34, 300, SLIDE_HEIGHT - 10];

export interface OracleOptions {
  /** Share of episodes that search with the entity name only (a vague query). */
  vagueRate?: number;
  /** Share of small-print questions where the crop is skipped. */
  skipCropRate?: number;
  /** Seeded choice of behaviour per (question, rollout). */
  seed?: number;
}


/**
 * A scripted Searcher for demonstrations: a search for the entity, attribute and year named in
 * the question, a crop of the small print when the fact is printed small, then search_complete.
 * With `vagueRate`/`skipCropRate` it makes the mistakes a warm-started policy makes, so that RL
 * has something to improve.
 */
export function createOracleScript(corpus: SlideCorpus, options: OracleOptions = {}): (context: ScriptContext) => string {
  const byQuestion = new Map<string, CorpusQuestion>();
  for (const list of Object.values(corpus.questions)) for (const q of list) byQuestion.set(q.question, q);
  const vagueRate = options.vagueRate ?? 0;
  const skipCropRate = options.skipCropRate ?? 0;
  const seed = options.seed ?? 0;
  return ({ turn, context, rolloutId }) => {
    const question = /Question: (.*)\n/.exec(context)?.[1]?.trim() ?? '';
    const asked = byQuestion.get(question);
    if (!asked) return '<search_complete>true</search_complete>';
    const roll = (salt: string) => (hashString(`${seed}|${question}|${rolloutId}|${salt}`) % 1000) / 1000;
    const vague = roll('vague') < vagueRate;
    const crop = asked.metadata.small && roll('crop') >= skipCropRate;
    const query = vague ? asked.metadata.entity : asked.metadata.query;
    const plan = [`<search>${query}</search>`, ...(crop ? [`<bbox>[${SMALL_PRINT_BOX.join(', ')}]</bbox>`] : []), '<search_complete>true</search_complete>'];
    return plan[Math.min(turn, plan.length - 1)]!;
  };
}
