import type { InvalidActionReason } from './actions';
import type { BoundingBox } from '../../ports/types';
import { textLines } from '../text-data';

/** One item shown to the policy after an action, in both forms: image (if any) and text. */
export interface ObservationItem {
  kind: 'page' | 'crop' | 'text';
  /** Basename of the page (for a crop: of the page it was cut from). */
  basename?: string;
  /** The text rendering a text-only policy reads: the page's text, caption or crop description. */
  text?: string;
  /** Size of the image as shown to the policy: bbox coordinates refer to this pixel space. */
  shownWidth?: number;
  shownHeight?: number;
  /** For a crop: the region of the source page, in the source page's pixels. */
  sourceRegion?: BoundingBox;
}

const MAX_TEXT_CHARS = 2000;

// `<eos>` too: a tokenizer with it as a special token would end the sequence inside the data.
const TAG_IN_CONTENT = /<(\/?)(think|search_complete|search|bbox|answer|information|eos)>/gi;

/**
 * Page text (and a question) is data, not protocol: a `<answer>` or `<eos>` printed on a slide must
 * not become a special token or count in a format check. Tag-like sequences get lookalike angle quotes.
 */
export function neutraliseTags(text: string): string {
  return text.replace(TAG_IN_CONTENT, '‹$1$2›');
}

/**
 * `<information>…</information>` around the text form of search results or a crop. A page's text
 * longer than `maxTextChars` is cut to its start, or, given the search's `query`, to the lines that
 * share its words (`queryExcerpt`).
 */
export function renderObservation(
  items: readonly ObservationItem[],
  options: { maxTextChars?: number; query?: string } = {},
): string {
  const limit = options.maxTextChars ?? MAX_TEXT_CHARS;
  const shorten = (text: string) =>
    options.query === undefined ? truncate(text, limit) : queryExcerpt(text, options.query, limit);
  const lines = items.map((item) => {
    const size = item.shownWidth && item.shownHeight ? ` (${item.shownWidth}x${item.shownHeight})` : '';
    const text = item.text ? `\n${shorten(neutraliseTags(item.text))}` : '';
    if (item.kind === 'page') return `[page ${item.basename ?? 'unknown'}${size}]${text}`;
    if (item.kind === 'crop') {
      const region = item.sourceRegion ? ` region [${item.sourceRegion.map(round).join(', ')}]` : '';
      return `[crop of ${item.basename ?? 'unknown'}${region}${size}]${text}`;
    }
    return truncate(neutraliseTags(item.text ?? ''), limit);
  });
  return `<information>${lines.join('\n')}</information>`;
}

/** The basename of the page an observation shows first (`[page name.png (640x360)]`, renderObservation), or null (a crop, no results). */
export function pageRead(observation: string): string | null {
  return /^\[page (.+?)(?: \(\d+x\d+\))?\]/.exec(observation)?.[1] ?? null;
}

/** The observation when a search finds nothing new. */
export function renderNoResults(query: string, reason: 'empty' | 'exhausted'): string {
  const why = reason === 'empty' ? 'no results' : 'no further results (every result was already shown)';
  return `<information>${why} for "${neutraliseTags(query)}". Try a different query.</information>`;
}

/**
 * The corrective observation after an invalid action (the episode goes on; the turn counts). It
 * names the actions without writing their tags, so that no tag token appears inside an
 * observation (a literal `<think>` there would pair with the policy's next `</think>`).
 */
export function correctiveMessage(
  reason: InvalidActionReason,
  message: string,
  mode: 'searcher' | 'answer' = 'searcher',
): string {
  const actions =
    mode === 'searcher'
      ? 'a search tag around your query, a bbox tag around [x1, y1, x2, y2] or the name of a marked region, or a search_complete tag around true'
      : 'a search tag around your query, or an answer tag around your final answer';
  return `<information>Your previous action is invalid (${reason}): ${neutraliseTags(message)}. Begin with a think tag around your reasoning, then give exactly one action: ${actions}.</information>`;
}

function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}…`;
}

const WORD = /[\p{L}\p{N}]+/gu;
const MAX_EXCERPT_CANDIDATES = 256;
const wordsOf = (text: string) => new Set((text.toLowerCase().match(WORD) ?? []) as string[]);

/**
 * A page's text cut to `limit` characters around a search's words, as a search engine's snippet:
 * the page's first line (its title or a table's header), then the lines sharing the most of the
 * query's words (the earlier first on a tie) while they fit, shown in the page's order, `…` where
 * lines are left out. So a table's row of the asked entity is shown though it is far down the
 * page. A page that fits, or whose other lines share no word, is cut as `truncate` cuts it.
 */
export function queryExcerpt(text: string, query: string, limit: number): string {
  if (text.length <= limit) return text;
  const asked = wordsOf(query);
  const lines = textLines(text);
  const scored = lines
    .map((line, at) => {
      let shared = 0;
      for (const w of wordsOf(line)) if (asked.has(w)) shared++;
      return { at, shared };
    })
    .filter(({ at, shared }) => at > 0 && shared > 0)
    .sort((a, b) => b.shared - a.shared || a.at - b.at);
  if (scored.length === 0) return truncate(text, limit);
  const render = (kept: readonly number[]) => {
    const shown: string[] = [];
    let last = -1;
    for (const at of kept) {
      if (at > last + 1) shown.push('…');
      shown.push(lines[at]!);
      last = at;
    }
    if (last < lines.length - 1) shown.push('…');
    return shown.join('\n');
  };
  let kept = [0];
  // The best lines only: what fits in an observation is a few dozen lines at most.
  for (const { at } of scored.slice(0, MAX_EXCERPT_CANDIDATES)) {
    const tried = [...kept, at].sort((a, b) => a - b);
    if (render(tried).length <= limit) kept = tried;
  }
  return kept.length === 1 ? truncate(text, limit) : render(kept);
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
