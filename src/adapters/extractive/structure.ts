// The structure of a page the extractive reader knows besides prose: `label: value` lines and
// Markdown tables. Each of their values is a fact with the words that say what it is about:
// a line's label and the page's heading above it; a table cell's column header and the other
// cells of its row. Everything else on the page is prose, read sentence by sentence.

import { textLines } from '../../core/text-data';

/** One value of a page with the words that place it. */
export interface Fact {
  /** Where it is said: its line's label, or its column's header ('' when the table has none). */
  label: string;
  /** What it is said of: the heading above a `label: value` line, or the other cells of a table row. */
  subject: string;
  /** The value as written. */
  value: string;
  /** Its place among the page's facts and sentences (the page's reading order). */
  position: number;
}

/** A page split into its facts and its prose lines (each with its place in the page). */
export interface PageStructure {
  facts: Fact[];
  prose: Array<{ text: string; position: number }>;
}

// A `label: value` line: a label of one to five words with a letter and no sentence mark, a
// colon, a value of at most MAX_VALUE_WORDS words (a longer one is prose: "2001: A Space Odyssey
// is a 1968 film ..."). Bounded repetitions only, so that no line makes the pattern backtrack for long.
const KEY_VALUE =
  /^\s*([\p{L}\p{N}][\p{L}\p{N}'’&/-]{0,40}(?:[ \t]+[\p{L}\p{N}'’&/-]{1,40}){0,4})[ \t]*:[ \t]*(\S.*)$/u;
const MAX_VALUE_WORDS = 16;
const TABLE_ROW = /^\s*\|.*\|\s*$/;
const SEPARATOR_CELL = /^:?-{3,}:?$/;
const HEADING_MARKS = /^\s*#{1,6}\s+/;
const MAX_HEADING_WORDS = 8;
/** A row of more cells is not read as a table (and no row costs more than this squared). */
const MAX_COLUMNS = 32;

const cellsOf = (row: string) =>
  row
    .trim()
    .slice(1, -1)
    .split('|')
    .map((c) => c.trim());

/**
 * The facts and prose of one page. A run of `|`-delimited lines is a table: its first row is the
 * header when the second is a Markdown separator (`| --- |`); every other row gives one fact a
 * non-empty cell (a row of more than 32 cells makes its run prose). A `label: value` line (a short label, a short value)
 * gives one fact whose subject is the nearest prose line
 * above it of at most eight words (the page's heading). Lines of neither kind are prose.
 */
export function structureOf(text: string): PageStructure {
  const lines = textLines(text);
  const facts: Fact[] = [];
  const prose: PageStructure['prose'] = [];
  let heading = '';
  let position = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    if (TABLE_ROW.test(line)) {
      let end = i;
      while (end + 1 < lines.length && TABLE_ROW.test(lines[end + 1]!)) end++;
      const rows = lines.slice(i, end + 1).map(cellsOf);
      if (rows.some((row) => row.length > MAX_COLUMNS)) {
        for (const row of lines.slice(i, end + 1)) prose.push({ text: row.trim(), position: position++ });
        i = end;
        continue;
      }
      const hasHeader = rows.length > 1 && rows[1]!.every((c) => SEPARATOR_CELL.test(c));
      const header = hasHeader ? rows[0]! : [];
      for (const row of rows.slice(hasHeader ? 2 : 0)) {
        for (const [j, cell] of row.entries()) {
          if (cell === '') continue;
          const others = row.filter((c, k) => k !== j && c !== '');
          facts.push({
            label: header[j] ?? '',
            subject: [heading, ...others].filter((s) => s !== '').join(' '),
            value: cell,
            position: position++,
          });
        }
      }
      i = end;
      continue;
    }
    const kv = KEY_VALUE.exec(line);
    const value = kv?.[2]?.trim() ?? '';
    if (
      kv !== null &&
      /\p{L}/u.test(kv[1]!) &&
      !/^https?$/i.test(kv[1]!) &&
      value.split(/\s+/).length <= MAX_VALUE_WORDS
    ) {
      facts.push({ label: kv[1]!, subject: heading, value, position: position++ });
      continue;
    }
    const text = line.replace(HEADING_MARKS, '').trim();
    prose.push({ text, position: position++ });
    // A short line heads what follows it; a paragraph does not.
    if (text.split(/\s+/).length <= MAX_HEADING_WORDS) heading = text;
  }
  return { facts, prose };
}
