import { hashString } from '../../core/random';
import type { ScriptContext } from '../../adapters/scripted-policy/scripted-policy';
import { SMALL_PRINT_BOX, type CorpusQuestion, type SlideCorpus } from './corpus';

export { SMALL_PRINT_BOX };

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
 * the question; then, when the page shown marks small print and the asked fact is not among its
 * legible lines, a crop of the small print; then search_complete. It decides from what the
 * policy itself is shown (the last observation in the context), so that every crop it
 * demonstrates is predictable from the context. With `vagueRate`/`skipCropRate` it makes the
 * mistakes a warm-started policy makes, so that RL has something to improve.
 */
export function createOracleScript(corpus: SlideCorpus, options: OracleOptions = {}): (context: ScriptContext) => string {
  const byQuestion = new Map<string, CorpusQuestion>();
  for (const list of Object.values(corpus.questions)) for (const q of list) byQuestion.set(q.question, q);
  const lines = new Map<string, string>();
  for (const deck of corpus.decks) for (const slide of deck.slides) for (const fact of slide.facts) lines.set(fact.id, fact.line);
  const vagueRate = options.vagueRate ?? 0;
  const skipCropRate = options.skipCropRate ?? 0;
  const seed = options.seed ?? 0;
  const complete = '<search_complete>true</search_complete>';
  return ({ turn, context, rolloutId }) => {
    const question = /Question: (.*)\n/.exec(context)?.[1]?.trim() ?? '';
    const asked = byQuestion.get(question);
    if (!asked) return complete;
    const roll = (salt: string) => (hashString(`${seed}|${question}|${rolloutId}|${salt}`) % 1000) / 1000;
    if (turn === 0) return `<search>${roll('vague') < vagueRate ? asked.metadata.entity : asked.metadata.query}</search>`;
    const observations = [...context.matchAll(/<information>([\s\S]*?)<\/information>/g)].map((m) => m[1]!);
    const last = observations[observations.length - 1] ?? '';
    const cropped = observations.some((o) => o.startsWith('[crop of'));
    const hidden = last.includes('[small print at') && !last.includes(lines.get(asked.metadata.factId) ?? '\u0000');
    if (!cropped && hidden && roll('crop') >= skipCropRate) return `<bbox>[${SMALL_PRINT_BOX.join(', ')}]</bbox>`;
    return complete;
  };
}
