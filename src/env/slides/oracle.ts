import { locationBinsText, parseRegionMarks } from '../../core/protocol/location';
import { hashString } from '../../core/random';
import type { ScriptContext } from '../../adapters/scripted-policy/scripted-policy';
import type { CorpusQuestion, SlideCorpus } from './corpus';
import { lineAfter, tagSpans } from '../../core/protocol/tag-spans';

export interface OracleOptions {
  /** Share of episodes that search with the entity name only (a vague query). */
  vagueRate?: number;
  /** Share of hidden small print where the crop is skipped. */
  skipCropRate?: number;
  /** Share of pages without the asked fact after which the search is not repeated (the next result). */
  skipResearchRate?: number;
  /** Searches at most (default 3). */
  maxSearches?: number;
  /**
   * The episode's turn budget (`episode.maxTurns`; default: none). A search is made only where a
   * crop and search_complete still fit after its page, and a crop only where search_complete fits
   * after it: a crop the budget cuts off gets no answer, so it is never demonstrated.
   */
  maxTurns?: number;
  /**
   * How a crop names its region: `'region'` (default) by the name the page marks it with
   * (`<bbox>footnote</bbox>`), `'location'` by copying its four location tokens.
   */
  cropBy?: 'region' | 'location';
  /** Seeded choice of behaviour per (question, rollout). */
  seed?: number;
}

/**
 * A scripted Searcher for demonstrations. It decides from what the policy itself is shown (the
 * last observation in the context), so that every action it demonstrates is predictable from the
 * context: first a search for the entity, attribute and year named in the question; then, when
 * the asked fact is legible on the page, search_complete; when the page is the fact's own (it prints
 * the fact's pointer line and marks the small-print region it names, src/env/slides/regions.ts), a crop of that region by its name, or its location tokens (`cropBy`; what it says is
 * unknown until the reader has it enlarged), then search_complete; otherwise the same search
 * again (the next result), up to `maxSearches` and within the turn budget (`maxTurns`). It never crops when the fact is on the page. With `vagueRate`,
 * `skipCropRate` and `skipResearchRate` it makes the mistakes a warm-started policy makes (a vague
 * query, no crop, giving up after one page), so that RL has something to improve.
 */
export function createOracleScript(
  corpus: SlideCorpus,
  options: OracleOptions = {},
): (context: ScriptContext) => string {
  const byQuestion = new Map<string, CorpusQuestion>();
  for (const list of Object.values(corpus.questions)) for (const q of list) byQuestion.set(q.question, q);
  const lines = new Map<string, string>();
  // A small fact's pointer line (`Employees 2015: see footnote`), printed in large type on its page only.
  const pointers = new Map<string, string>();
  for (const deck of corpus.decks)
    for (const slide of deck.slides)
      for (const fact of slide.facts) {
        lines.set(fact.id, fact.line);
        if (fact.pointer) pointers.set(fact.id, fact.pointer.line);
      }
  const vagueRate = options.vagueRate ?? 0;
  const skipCropRate = options.skipCropRate ?? 0;
  const skipResearchRate = options.skipResearchRate ?? 0;
  const maxSearches = options.maxSearches ?? 3;
  const maxTurns = options.maxTurns ?? Number.POSITIVE_INFINITY;
  const cropBy = options.cropBy ?? 'region';
  const seed = options.seed ?? 0;
  const complete = '<search_complete>true</search_complete>';
  return ({ turn, context, rolloutId }) => {
    const question = lineAfter(context, 'Question: ')?.trim() ?? '';
    const asked = byQuestion.get(question);
    if (!asked) return complete;
    const roll = (salt: string) => (hashString(`${seed}|${question}|${rolloutId}|${salt}`) % 1000) / 1000;
    const vague = roll('vague') < vagueRate;
    if (turn === 0) return `<search>${vague ? asked.metadata.entity : asked.metadata.query}</search>`;
    const observations = tagSpans(context, '<information>', '</information>').map((s) => s.body);
    const last = observations[observations.length - 1] ?? '';
    const searches = [...context.matchAll(/<search>/g)].length;
    if (last.startsWith('[crop of')) return complete;
    if (last.includes(lines.get(asked.metadata.factId) ?? '\u0000')) return complete;
    // The region that holds the asked fact, known to the oracle (where it was drawn); a policy reads
    // it off the page's pointer line. Pointer lines name no organisation (`Employees 2013: see
    // footnote` is printed on other decks' pages too), so the oracle crops only the fact's own page,
    // which prints it; on any other page (of the organisation or not) it searches again.
    // What the region says is unknown until the reader has it enlarged.
    const role = asked.metadata.role;
    const region = parseRegionMarks(last).find((m) => m.label === role);
    const onGoldenPage = asked.goldenBasenames.some((name) => last.startsWith(`[page ${name} `));
    if (
      region &&
      onGoldenPage &&
      last.includes(pointers.get(asked.metadata.factId) ?? '\u0000') &&
      turn + 2 <= maxTurns &&
      roll(`crop${turn}`) >= skipCropRate
    )
      return `<bbox>${cropBy === 'region' ? region.label : locationBinsText(region.bins)}</bbox>`;
    // A vague query is followed by the precise one; a precise one is repeated for the next result.
    if (searches < maxSearches && turn + 3 <= maxTurns && roll(`research${turn}`) >= skipResearchRate)
      return `<search>${asked.metadata.query}</search>`;
    return complete;
  };
}
